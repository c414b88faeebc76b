package render

import (
	"bytes"
	"github.com/stowage/stowage/internal/testing/linediff"
	"testing"
)

// TestDaemonSetNamesAcrossPullers: a puller's node group ("a" + "-gpu")
// or part ("a" + "-1") may spell another puller's name in the namespace.
// The other puller keeps its name, the group's DaemonSet gets a hash, and
// the output does not depend on the order the pullers are listed in.
// (FuzzRender's regress-*-is-another-puller.)
func TestDaemonSetNamesAcrossPullers(t *testing.T) {
	const head = `environments:
  app: {image: "busybox:1"}
  gpu: {image: "nvidia/cuda:12.0", nodeSelector: {gpu: "true"}}
profiles:
  p:
    pullers:
`
	a := "    - {name: a, namespace: ns, environments: [app, gpu]}\n"
	aGPU := "    - {name: a-gpu, namespace: ns, environments: [app]}\n"
	var streams [][]byte
	for _, pullers := range []string{a + aGPU, aGPU + a} {
		cfg := loadConfig(t, "c.yaml", head+pullers)
		objs := mustRender(t, Input{Config: cfg, Profile: "p", Lock: lockFor(t, cfg, "p")})
		if _, err := Files(objs); err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, ds := range daemonSets(objs) {
			names[ds.Name] = true
		}
		if len(names) != 3 || !names["a"] || !names["a-gpu"] {
			t.Errorf("DaemonSets %v, want a, a-gpu (the puller) and a hashed name for a's gpu group", names)
		}
		streams = append(streams, encode(t, objs))
	}
	if !bytes.Equal(streams[0], streams[1]) {
		t.Errorf("the output depends on the order of the pullers:\n%s", linediff.First(streams[0], streams[1]))
	}
}
