package schema

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRecordsNameCollision: two pullers of one namespace may not write the
// same records ConfigMap, whether both set recordsName or one puller's
// default (<name>-records) is the other's recordsName; the error is at the
// later puller's field, with its file and line. Other namespaces may reuse
// the name.
func TestRecordsNameCollision(t *testing.T) {
	cases := []struct {
		pullers   string
		wantPath  string
		wantLine  int
		wantError string
	}{
		{
			pullers: `    - {name: a, namespace: ns, environments: [app], recordsName: shared}
    - {name: b, namespace: ns, environments: [app], recordsName: shared}
`,
			wantPath:  "profiles.p.pullers[1].recordsName",
			wantLine:  6,
			wantError: `records ConfigMap "shared" in namespace "ns" is also pullers[0]'s; give each puller its own recordsName`,
		},
		{
			pullers: `    - {name: a, namespace: ns, environments: [app]}
    - {name: b, namespace: ns, environments: [app], recordsName: a-records}
`,
			wantPath:  "profiles.p.pullers[1].recordsName",
			wantLine:  6,
			wantError: `records ConfigMap "a-records" in namespace "ns" is also pullers[0]'s; give each puller its own recordsName`,
		},
		{
			pullers: `    - {name: a, namespace: ns, environments: [app], recordsName: shared}
    - {name: b, namespace: other, environments: [app], recordsName: shared}
`,
		},
	}
	for _, c := range cases {
		dir := t.TempDir()
		conf := "environments: {app: {image: \"busybox:1.36\"}}\nprofiles:\n  p:\n    pullers:\n" + c.pullers
		if err := os.WriteFile(filepath.Join(dir, "stowage.yaml"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir, Options{})
		if c.wantError == "" {
			if err != nil {
				t.Errorf("pullers in two namespaces: %v", err)
			}
			continue
		}
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 {
			t.Fatalf("err = %v, want one located error", err)
		}
		e := es[0]
		if e.Path != c.wantPath || e.Line != c.wantLine || e.Msg != c.wantError || filepath.Base(e.File) != "stowage.yaml" {
			t.Errorf("got %s:%d %s: %s\nwant stowage.yaml:%d %s: %s", e.File, e.Line, e.Path, e.Msg, c.wantLine, c.wantPath, c.wantError)
		}
	}
}
