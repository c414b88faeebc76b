package schema

import "testing"

// TestControlCharacterLocated: a character YAML does not allow is one
// error naming the file once, with its line and column, and saying which
// character it is (CUE's decoder named the file twice and no line).
func TestControlCharacterLocated(t *testing.T) {
	_, one := manyFiles(1)
	f := File{Name: "cfg/x.yaml", Data: []byte("images:\n  z:\n    reference: busy\x07box:1\n")}
	_, err := LoadFiles("cfg", append([]File{f}, one...), Options{})
	want := "cfg/x.yaml:3:20: U+0007 is a control character, which YAML does not allow (write it as an escape in a double-quoted string, or remove it)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// TestMissingFieldNamed: a required field left out is named with what to
// write there, not in CUE's words ("incomplete value string"); a field
// given a type instead of a value says so.
func TestMissingFieldNamed(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"images: x: reference: \"busybox:1\"\nprofiles: p: pullers: [{namespace: \"n\", images: [\"x\"]}]\n",
			"cfg/c.cue:3:24: profiles.p.pullers[0].name: name is required and missing: write name: followed by a string"},
		{"images: x: {}\nprofiles: p: pullers: [{name: \"a\", namespace: \"n\", images: [\"x\"]}]\n",
			"cfg/c.cue:2:9: images.x: reference or byNodeLabel is required"},
		{"images: x: reference: \"busybox:1\"\nprofiles: p: pullers: [{name: string, namespace: \"n\", images: [\"x\"]}]\n",
			"cfg/c.cue:3:31: profiles.p.pullers[0].name: name has no concrete value: write a string (CUE: incomplete value string)"},
		// A required list left out: CUE names its first element; the
		// message names the list, at the block that lacks it.
		{"images: x: reference: \"busybox:1\"\nprofiles: p: pullers: [{name: \"a\", namespace: \"n\", images: [\"x\"]}]\nprofiles: p: policy: {mode: \"audit\"}\n",
			`cfg/c.cue:4:14: profiles.p.policy.kinds: kinds is required and missing: write kinds: followed by a list of at least one of "kyverno", "kyverno-ivpol", "policy-controller", "crio"`},
		{"images: x: reference: \"busybox:1\"\nprofiles: p: pullers: [{name: \"a\", namespace: \"n\", images: [\"x\"]}]\nprofiles: p: policy: kinds: []\n",
			`cfg/c.cue:4:22: profiles.p.policy.kinds: kinds is empty: write at least one of "kyverno", "kyverno-ivpol", "policy-controller", "crio"`},
		// A single value where the schema wants a list says to write a
		// list, and of what, instead of CUE's spelling of the list type.
		{"images: x: reference: \"busybox:1\"\nprofiles: p: pullers: [{name: \"a\", namespace: \"n\", images: [\"x\"]}]\nprofiles: p: policy: kinds: \"kyverno\"\n",
			`cfg/c.cue:4:29: profiles.p.policy.kinds: kinds is a single string; write a list, each one of "kyverno", "kyverno-ivpol", "policy-controller", "crio" (kinds: [ … ])`},
		{"images: x: reference: \"busybox:1\"\nprofiles: p: pullers: [{name: \"a\", namespace: \"n\", images: \"x\"}]\n",
			`cfg/c.cue:3:60: profiles.p.pullers[0].images: images is a single string; write a list, each element a string (images: [ … ])`},
	} {
		_, err := LoadFiles("cfg", []File{{Name: "cfg/c.cue", Data: []byte("package stowage\n" + c.file)}}, Options{})
		if err == nil || err.Error() != c.want {
			t.Errorf("%s\nerr = %v\nwant %s", c.file, err, c.want)
		}
	}
}

// TestUserConflictOnly: two of the user's values for one field, neither
// of them wrong alone, are one conflict naming those two; the schema's
// other alternatives ("policy-controller") are not reported as if the
// user had written them. In YAML or JSON the same key twice in a mapping
// is a duplicate key, at the second, naming both lines.
func TestUserConflictOnly(t *testing.T) {
	base := "images: x: reference: \"busybox:1\"\nprofiles: p: pullers: [{name: \"a\", namespace: \"n\", images: [\"x\"]}]\n"
	for _, c := range []struct {
		files []File
		want  string
	}{
		{[]File{{Name: "cfg/a.cue", Data: []byte("package stowage\n" + base + "profiles: p: policy: kinds: [\"kyverno\"]\n")},
			{Name: "cfg/b.cue", Data: []byte("package stowage\nprofiles: p: policy: kinds: [\"crio\"]\n")}},
			`cfg/a.cue:4:30: profiles.p.policy.kinds[0]: profile "p" is defined more than once, with different values for policy.kinds[0]: conflicting values "crio" and "kyverno" (see also cfg/b.cue:2:30)`},
		{[]File{{Name: "cfg/a.cue", Data: []byte("package stowage\n" + base)},
			{Name: "cfg/p.json", Data: []byte(`{"profiles": {"p": {"secrets": "render",` + "\n" + `"secrets": "render"}}}`)}},
			`cfg/p.json:2:2: profiles.p.secrets: duplicate key "secrets": this mapping gives it at line 1 and again at line 2; a key appears once in a mapping (keep one)`},
		// One wrong value in a JSON file is one error at the value, as in
		// YAML: the object's opening brace is no second definition.
		{[]File{{Name: "cfg/a.cue", Data: []byte("package stowage\n" + base)},
			{Name: "cfg/i.json", Data: []byte("{\n  \"images\": {\n    \"y\": {\"reference\": 5}\n  }\n}\n")}},
			`cfg/i.json:3:24: images.y.reference: conflicting values 5 and string (mismatched types int and string)`},
		// Two JSON files giving one field two values are still named both.
		{[]File{{Name: "cfg/a.cue", Data: []byte("package stowage\n" + base)},
			{Name: "cfg/i.json", Data: []byte(`{"images": {"y": {"reference": "busybox:1"}}}`)},
			{Name: "cfg/j.json", Data: []byte(`{"images": {"y": {"reference": "busybox:2"}}}`)}},
			`cfg/i.json:1:32: images.y.reference: image "y" is defined more than once, with different values for reference: conflicting values "busybox:2" and "busybox:1" (see also cfg/j.json:1:32)`},
	} {
		_, err := LoadFiles("cfg", c.files, Options{})
		if err == nil || err.Error() != c.want {
			t.Errorf("err = %v\nwant %s", err, c.want)
		}
	}
}
