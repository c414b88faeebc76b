package main

import "testing"

// TestDashDirIsUsageError: "-" as DIR is a usage error (exit 2) naming the
// command and what it reads, for every command that takes a config
// directory, with nothing on stdout (also with -o json).
func TestDashDirIsUsageError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"render", "-"}, "stowage: DIR -: render reads a config directory, not stdin; give its path\n"},
		{[]string{"vet", "-", "-o", "json"}, "stowage: DIR -: vet reads a config directory or a kustomization, not stdin; give its path\n"},
		{[]string{"lock", "-"}, "stowage: DIR -: lock reads a config directory or a kustomization, not stdin; give its path\n"},
		{[]string{"status", "-"}, "stowage: DIR -: status reads a config directory or a kustomization, not stdin; give its path\n"},
		{[]string{"mirror", "-", "--dry-run"}, "stowage: DIR -: mirror reads a config directory or a kustomization, not stdin; give its path\n"},
		{[]string{"openpai", "services", "-"}, "stowage: DIR -: openpai services reads a config directory, not stdin; give its path\n"},
	} {
		stdout, stderr, code := runCLI(t, nil, c.args...)
		if code != 2 || len(stdout) != 0 || len(stderr) < len(c.want) || stderr[:len(c.want)] != c.want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and stderr starting %q", c.args, code, stdout, stderr, c.want)
		}
	}
}
