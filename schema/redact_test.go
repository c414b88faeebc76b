package schema

import (
	"strings"
	"testing"
)

// TestLiteralPasswordRedactedFromConflicts: when CUE prints a whole struct
// (a conflict on its parent), a literal password inside it is replaced, in
// CUE and YAML files alike, whether or not literals are allowed.
func TestLiteralPasswordRedactedFromConflicts(t *testing.T) {
	const secret = "LiteralHunter2"
	cases := map[string][]File{
		"cue": {{Name: "c.cue", Data: []byte(`environments: {quay: {image: "quay.io/a/b:1", auth: {username: "b", password: "` + secret + `"}}, quay: 5}
profiles: p: pullers: [{name: "x", namespace: "y", environments: ["quay"]}]
`)}},
		"yaml and cue": {
			{Name: "a.yaml", Data: []byte("environments:\n  quay:\n    image: quay.io/a/b:1\n    auth: {username: b, password: " + secret + "}\n")},
			{Name: "b.cue", Data: []byte(`environments: quay: "x"
profiles: p: pullers: [{name: "x", namespace: "y", environments: ["quay"]}]
`)},
		},
	}
	for name, files := range cases {
		for _, allow := range []bool{false, true} {
			_, err := LoadFiles(".", files, Options{AllowLiteralPasswords: allow})
			if err == nil {
				t.Fatalf("%s: loaded", name)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s (allow=%v): the password shows:\n%v", name, allow, err)
			}
		}
	}
}
