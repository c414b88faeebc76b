package main

import "testing"

// TestVetWarnsNoExecuteStartupTaint: vet accepts a startup taint with
// effect NoExecute (exit 0) but warns on stderr that it evicts the pods
// that do not tolerate it; NoSchedule gets no warning.
func TestVetWarnsNoExecuteStartupTaint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ effect, stderr string }{
		{"NoExecute", "stowage: warning: profile lab: puller notebooks: startup taint stowage.dev/images has effect NoExecute, which evicts the pods on a new node that do not tolerate it (other components' DaemonSets too); use NoSchedule\n"},
		{"NoSchedule", ""},
	} {
		dir := diskConfig(t, "        startup: {taint: {key: stowage.dev/images, effect: "+tc.effect+"}}\n")
		stdout, stderr, code := runCLI(t, nil, "vet", dir)
		if code != 0 || string(stdout) != "ok: profile lab: 2 images pre-pulled\n" || stderr != tc.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr\n%q\nwant\n%q", tc.effect, code, stdout, stderr, tc.stderr)
		}
	}
}
