package mirror

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/sigverify"
)

// TestHaveNotALock: --have naming a file that is not a lock (a password
// file, a kubeconfig, /etc/shadow-like text) is refused naming the file,
// and no line of it appears in the message.
func TestHaveNotALock(t *testing.T) {
	t.Parallel()
	const secret = "hunter2-have-canary"
	for name, body := range map[string]string{
		"yaml":       "user: alice\npassword: " + secret + "\n",
		"shadow":     "root:$6$" + secret + ":19000:0:99999:7:::\n",
		"kubeconfig": "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: " + secret + "\n",
		"binary":     "\x00\x01" + secret + "\xff",
	} {
		t.Run(name, func(t *testing.T) {
			err := (&Job{}).LeaveOut([]byte(body), "/site/site.lock.yaml")
			if err == nil {
				t.Fatal("a file that is not a lock was taken as one")
			}
			if !strings.Contains(err.Error(), "--have /site/site.lock.yaml: not a stowage lock") {
				t.Errorf("the error does not name --have and the file: %v", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the file: %v", err)
			}
		})
	}
}

// TestPruneNoAttachments: without attachments an image under a required
// policy cannot verify, a usage error naming it and its policy; under an
// optional one verification is left out with a note; --no-verify leaves
// no policy either way.
func TestPruneNoAttachments(t *testing.T) {
	t.Parallel()
	req := &sigverify.Policy{At: "images.a.verify", Required: true}
	opt := &sigverify.Policy{At: "images.b.verify"}
	j := &Job{Policies: map[string][]*sigverify.Policy{"r/a": {req}, "r/b": {opt}}, Trust: &Trust{}}
	var oe *OptionError
	err := j.Prune(Request{NoAttachments: true, Warn: io.Discard})
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "cannot verify: r/a (images.a.verify); carry them") {
		t.Errorf("required: %v", err)
	}
	var note strings.Builder
	j = &Job{Policies: map[string][]*sigverify.Policy{"r/b": {opt}}, Trust: &Trust{}}
	if err := j.Prune(Request{NoAttachments: true, Warn: &note}); err != nil || j.Policies != nil || j.Trust != nil ||
		note.String() != "stowage: note: --no-attachments: the signatures of 1 image under optional verify policies are not carried, nor verified at the destination\n" {
		t.Errorf("optional: %v, %v, note %q", err, j.Policies, note.String())
	}
	j = &Job{Policies: map[string][]*sigverify.Policy{"r/a": {req}}, Trust: &Trust{}}
	if err := j.Prune(Request{NoAttachments: true, NoVerify: true}); err != nil || j.Policies != nil || j.Trust != nil {
		t.Errorf("--no-verify: %v, %v", err, j.Policies)
	}
	j = &Job{Policies: map[string][]*sigverify.Policy{"r/a": {req}}}
	if err := j.Prune(Request{}); err != nil || len(j.Policies) != 1 {
		t.Errorf("with attachments: %v, %v", err, j.Policies)
	}
}

// TestOptionsWithoutSite: without --to, images the config gives no site
// repository are a usage error naming each once.
func TestOptionsWithoutSite(t *testing.T) {
	t.Parallel()
	j := &Job{Images: []Image{{Name: "r/b"}, {Name: "r/a"}, {Name: "r/a"}, {Name: "r/c", Site: "site/r/c"}}}
	_, err := j.Options(Request{})
	var oe *OptionError
	if !errors.As(err, &oe) || err.Error() != "--to is required: the config names no site registry (its site field) for r/a, r/b; give HOST[:PORT][/PREFIX] or oci:PATH" {
		t.Errorf("Options: %v", err)
	}
	j = &Job{Images: []Image{{Name: "r/c", Site: "site/r/c"}}}
	if _, err := j.Options(Request{}); err != nil || j.Destination != "the config's site registries" {
		t.Errorf("every image has a site: %v, destination %q", err, j.Destination)
	}
}

// TestRequestValidate: flags that contradict each other are an
// *OptionError naming them; a plain push from a bundle or a copy to a
// registry is accepted.
func TestRequestValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{From: "registry.example/x"}, `--from "registry.example/x": want oci:PATH`},
		{Request{From: "oci:b", To: "oci:c"}, "--from oci: and --to oci: together"},
		{Request{From: "oci:b", DirGiven: true}, "give no DIR and no --profile"},
		{Request{From: "oci:b", Profiles: []string{"lab"}}, "give no DIR and no --profile"},
		{Request{Trust: "t.yaml"}, "--trust is the site's trust for a push from a bundle"},
		{Request{From: "oci:b", Trust: "t.yaml", NoVerify: true}, "--no-verify and a site trust (--trust or STOWAGE_SITE_TRUST) contradict each other"},
		{Request{From: "oci:b", Trust: "-", Have: "-"}, "--trust - and --have - both read standard input"},
		{Request{From: "oci:b", Artifacts: []string{"a"}}, "--from oci: pushes the artifacts the bundle holds"},
	} {
		err := tc.req.Validate()
		var oe *OptionError
		if !errors.As(err, &oe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an *OptionError saying %q", tc.req, err, tc.want)
		}
	}
	for _, ok := range []Request{{From: "oci:b", To: "r.site", Trust: "-", Have: "site.lock.yaml"}, {To: "oci:b", Have: "-"}, {Dir: "cfg", DirGiven: true}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", ok, err)
		}
	}
}
