package confined

import (
	"strings"
	"testing"
)

// TestReadFileProcfs: a directory on procfs is no way around the regular
// file rule, which os.Root does not apply: /proc/self/status claims to
// be a regular file, and is refused as a file of /proc; its magic links
// (/proc/self/cwd, fd/N) are absolute or not paths, so os.Root refuses
// them.
func TestReadFileProcfs(t *testing.T) {
	for _, tc := range []struct{ dir, rel, want string }{
		{"/proc/self", "status", "is a file of /proc"},
		{"/proc/self", "cwd/go.mod", "leads outside the directory /proc/self"},
		{"/proc", "self/status", "is a file of /proc"},
	} {
		_, err := ReadFile(tc.dir, tc.rel, Password)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s in %s: got %v, want %q", tc.rel, tc.dir, err, tc.want)
		}
	}
}
