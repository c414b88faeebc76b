package fn

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/testing/offlineimage"
)

// TestLocksAreStandIns: the locks of the KRM examples and test inputs hold
// exactly the digests of the deterministic stand-in images
// (internal/testing/offlineimage) of their references — the digests `stowage lock`
// resolves against a registry seeded with them — so no digest in them is
// typed by hand or invented.
func TestLocksAreStandIns(t *testing.T) {
	var locks []*lock.Lock
	var names []string
	for _, p := range []string{"../examples/gitops-argo/prepull/stowage.lock.yaml", "testdata/kustomize/pin-only/stowage.lock.yaml", "testdata/kustomize/pin-image-volume/stowage.lock.yaml"} {
		l, err := lock.Read(p)
		if err != nil {
			t.Fatal(err)
		}
		locks, names = append(locks, l), append(names, p)
	}
	inputs, _ := filepath.Glob("testdata/*/input.yaml")
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if n.GetKind() != lock.ObjectKind {
				continue
			}
			l, err := lock.ParseNode(n.YNode(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			locks, names = append(locks, l), append(names, in)
		}
	}
	if len(locks) < 5 {
		t.Fatalf("found %d locks; the globs are broken", len(locks))
	}
	for i, l := range locks {
		for _, e := range l.Entries {
			want, err := offlineimage.Entry(e.Reference)
			if err != nil {
				t.Fatal(err)
			}
			if e.Digest != want.Digest || e.Kind != want.Kind || e.Size != want.Size || len(e.Platforms) != len(want.Platforms) {
				t.Errorf("%s: %s is not its stand-in: got %s %s, want %s %s", names[i], e.Name, e.Kind, e.Digest, want.Kind, want.Digest)
				continue
			}
			for j := range e.Platforms {
				if e.Platforms[j] != want.Platforms[j] {
					t.Errorf("%s: %s platform %d = %+v, want %+v", names[i], e.Name, j, e.Platforms[j], want.Platforms[j])
				}
			}
		}
	}
}
