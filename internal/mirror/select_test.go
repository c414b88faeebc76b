package mirror

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/schema"
)

// selectExample plans the submarine example's only profile with lock l
// and selects its images.
func selectExample(t *testing.T, l *lock.Lock) (*plan.Plan, *Selection, error) {
	t.Helper()
	cfg, err := schema.Load("../../examples/submarine-notebooks", schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(cfg, "", l)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := Select([][]*plan.Image{p.Images})
	return p, sel, err
}

// TestSelect: one image per pinned digest of each lock key, named by its
// key, tagged as written (an index or manifest pin), at the repository of
// the site reference render writes for it.
func TestSelect(t *testing.T) {
	l, err := lock.Read(filepath.Join("../../examples/submarine-notebooks", lock.FileName))
	if err != nil {
		t.Fatal(err)
	}
	p, sel, err := selectExample(t, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(sel.Images) != len(p.Images) {
		t.Fatalf("%d images selected, want one per key: %d", len(sel.Images), len(p.Images))
	}
	for i, img := range sel.Images {
		pi := p.Images[i]
		e, _ := l.Lookup(pi.Key)
		site := pi.Uses[0].Site
		if img.Name != pi.Key || img.Digest.String() != e.Digest || img.Tag != pi.Ref.Tag || img.Site == "" || !strings.HasPrefix(site, img.Site+":") {
			t.Errorf("image %d: %s %s tag %q site %q; want %s %s tag %q at the repository of %s", i, img.Name, img.Digest, img.Tag, img.Site, pi.Key, e.Digest, pi.Ref.Tag, site)
		}
	}
	copied, held := LeaveOut(sel.Images, l)
	if len(copied) != 0 || len(held) != len(sel.Images) {
		t.Errorf("against its own lock: %d copied, %d held; want 0 and %d", len(copied), len(held), len(sel.Images))
	}
	copied, held = LeaveOut(sel.Images, &lock.Lock{})
	if len(copied) != len(sel.Images) || len(held) != 0 {
		t.Errorf("against an empty lock: %d copied, %d held; want %d and 0", len(copied), len(held), len(sel.Images))
	}
}

// TestSelectUnpinned: every image the lock lacks is named, sorted, in an
// *UnpinnedError.
func TestSelectUnpinned(t *testing.T) {
	p, _, err := selectExample(t, &lock.Lock{})
	var u *UnpinnedError
	if !errors.As(err, &u) || len(u.Problems) != len(p.Images) {
		t.Fatalf("got %v, want an *UnpinnedError naming each of %d images", err, len(p.Images))
	}
	for i, img := range p.Images {
		if !strings.Contains(u.Problems[i], img.Key) {
			t.Errorf("problem %d %q does not name %s", i, u.Problems[i], img.Key)
		}
	}
}
