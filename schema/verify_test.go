package schema

import (
	"strings"
	"testing"
)

// TestVerifyPolicyLocated: a verify policy's mistakes are each reported at
// their field, and a good one decodes with its mode, keys and identities.
func TestVerifyPolicyLocated(t *testing.T) {
	const base = "images: x: reference: \"busybox:1\"\nprofiles: p: pullers: [{name: \"a\", namespace: \"n\", images: [\"x\"]}]\n"
	for _, c := range []struct{ verify, want string }{
		{"verify: {}\n", "cfg/c.cue:4:1: verify: verify needs keys or identities to verify with"},
		{"verify: identities: [{identity: \"a@b\", issuer: \"https://i\"}]\n",
			"cfg/c.cue:4:9: verify.identities: identities need a trustedRoot (a sigstore trusted_root.json in a folder of the config directory, such as trust/trusted_root.json) to be checked against"},
		{"verify: {keys: [\"k.pub\"], trustedRoot: \"t.json\"}\n",
			"cfg/c.cue:4:27: verify.trustedRoot: a trustedRoot is only used by identities; give identities or remove it"},
		{"verify: {trustedRoot: \"t.json\", identities: [{identity: \"a@b\", identityRegexp: \"a\", issuer: \"https://i\"}]}\n",
			"cfg/c.cue:4:64: verify.identities[0].identityRegexp: give either identity or identityRegexp, not both"},
		{"verify: {trustedRoot: \"t.json\", identities: [{identity: \"a@b\"}]}\n",
			"cfg/c.cue:4:46: verify.identities[0]: an identity needs issuer or issuerRegexp"},
		{"verify: {trustedRoot: \"t.json\", identities: [{identity: \"a@b\", issuerRegexp: \"(\"}]}\n",
			"cfg/c.cue:4:64: verify.identities[0].issuerRegexp: \"(\" is not a regular expression: error parsing regexp: missing closing ): `(`"},
		{"verify: {keys: [\"k.pub\", \"o.pub\", \"k.pub\"]}\n",
			"cfg/c.cue:4:35: verify.keys[2]: key \"k.pub\" is listed twice (keys[0] too); list each key once"},
		{"verify: {trustedRoot: \"t.json\", identities: [{identity: \"a@b\\u001b[2J\", issuer: \"https://i\"}]}\n",
			"cfg/c.cue:4:47: verify.identities[0].identity: the identity holds a control, format or non-UTF-8 character; use printable characters"},
		{"verify: {trustedRoot: \"t.json\", identities: [{identity: \"a@b\", issuer: \"https://i\\r\\nX: y\"}]}\n",
			"cfg/c.cue:4:64: verify.identities[0].issuer: the issuer holds a control, format or non-UTF-8 character; use printable characters"},
		{"verify: {trustedRoot: \"t.json\", identities: [{identityRegexp: \"^a\\u0007\", issuer: \"https://i\"}]}\n",
			"cfg/c.cue:4:47: verify.identities[0].identityRegexp: the identityRegexp holds a control"},
		{"verify: {keys: [\"k.pub\"], mode: \"maybe\"}\n", ""},
	} {
		cfg, err := LoadFiles("cfg", []File{{Name: "cfg/c.cue", Data: []byte("package stowage\n" + base + c.verify)}}, Options{})
		if c.want == "" {
			if err == nil {
				t.Errorf("%s: mode maybe accepted: %+v", c.verify, cfg.Verify)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s\nerr = %v\nwant %s", c.verify, err, c.want)
		}
	}
	cfg, err := LoadFiles("cfg", []File{{Name: "cfg/c.yaml", Data: []byte(
		"images: {x: {reference: \"busybox:1\"}}\nprofiles: {p: {pullers: [{name: a, namespace: n, images: [x]}]}}\n" +
			"verify: {mode: optional, keys: [k.pub], trustedRoot: t.json, identities: [{identityRegexp: '^https://github.com/o/', issuer: 'https://token.actions.githubusercontent.com'}]}\n")}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := cfg.Verify
	if v == nil || v.Mode != "optional" || v.Required() || len(v.Keys) != 1 || v.Keys[0] != "k.pub" || v.TrustedRoot != "t.json" ||
		len(v.Identities) != 1 || v.Identities[0].IdentityRegexp != "^https://github.com/o/" || v.Identities[0].Issuer != "https://token.actions.githubusercontent.com" {
		t.Errorf("verify = %+v", v)
	}
}

// TestVerifyPolicyPerImage: an image's and an environment's own verify
// policy is checked at its field and decoded.
func TestVerifyPolicyPerImage(t *testing.T) {
	const prof = "profiles: p: pullers: [{name: \"a\", namespace: \"n\", images: [\"x\"], environments: [\"e\"]}]\n"
	_, err := LoadFiles("cfg", []File{{Name: "cfg/c.cue", Data: []byte("package stowage\n" + prof +
		"images: x: {reference: \"busybox:1\", verify: {}}\nenvironments: e: {image: \"busybox:2\", verify: identities: [{identity: \"a@b\", issuer: \"https://i\"}]}\n")}}, Options{})
	for _, want := range []string{
		"images.x.verify: verify needs keys or identities to verify with",
		"environments.e.verify.identities: identities need a trustedRoot",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to hold %s", err, want)
		}
	}
	cfg, err := LoadFiles("cfg", []File{{Name: "cfg/c.cue", Data: []byte("package stowage\n" + prof +
		"images: x: {reference: \"busybox:1\", verify: keys: [\"k.pub\"]}\nenvironments: e: {image: \"busybox:2\", verify: {mode: \"optional\", keys: [\"e.pub\"]}}\n")}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v := cfg.Images["x"].Verify; v == nil || !v.Required() || v.Keys[0] != "k.pub" {
		t.Errorf("images.x.verify = %+v", v)
	}
	if v := cfg.Environments["e"].Verify; v == nil || v.Required() || v.Keys[0] != "e.pub" {
		t.Errorf("environments.e.verify = %+v", v)
	}
}
