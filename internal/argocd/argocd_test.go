package argocd

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckoutRoot: the checkout is dir less the source path at its end;
// a path that is not dir's end, not local, or empty gives "".
func TestCheckoutRoot(t *testing.T) {
	t.Parallel()
	checkout, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(checkout, "apps", "prepull")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, sp, want string }{
		{dir, "apps/prepull", checkout},
		{dir, "apps/prepull/", checkout},
		{link, "apps/prepull", checkout},
		{dir, ".", dir},
		{dir, "", ""},
		{dir, "other/prepull", ""},
		{dir, "../apps/prepull", ""},
		{dir, "/apps/prepull", ""},
		{dir, "pull", ""},
		{filepath.Join(checkout, "missing"), "missing", ""},
	} {
		if got := CheckoutRoot(c.dir, c.sp); got != c.want {
			t.Errorf("CheckoutRoot(%q, %q) = %q, want %q", c.dir, c.sp, got, c.want)
		}
	}
}
