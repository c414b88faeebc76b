package v1alpha1_test

import (
	"encoding/json"
	"fmt"

	"github.com/stowage/stowage/api/v1alpha1"
)

// A config built in Go: one profile with one puller of one image.
// Profile("") picks the only profile.
func ExampleConfig_Profile() {
	cfg := &v1alpha1.Config{
		Images: map[string]v1alpha1.Image{"busybox": {Reference: "busybox:1.36"}},
		Profiles: map[string]v1alpha1.Profile{"lab": {
			Namespace: "prepull",
			Pullers:   []v1alpha1.Puller{{Name: "tools", Namespace: "prepull", Images: []string{"busybox"}}},
		}},
	}
	name, p, err := cfg.Profile("")
	fmt.Println(name, p.Pullers[0].Name, err)
	_, _, err = cfg.Profile("prod")
	fmt.Println(err)
	// Output:
	// lab tools <nil>
	// no such profile "prod"; profiles: lab
}

// Reading one cell of a `stowage status -o json` report.
func ExampleStatusReport_Image() {
	out := []byte(`{"profile": "lab", "ready": false,
	  "images": [{"name": "registry.lab:5000/team/app:1", "state": "pulling", "digest": "sha256:00",
	    "nodes": [], "reference": "registry.lab:5000/team/app:1@sha256:00", "source": "team/app:1",
	    "onNodes": [{"node": "node-1", "state": "pulling", "reason": "Waiting"}], "offlineUse": null}],
	  "daemonSets": [], "nodes": ["node-1"], "sources": {"complete": true}}`)
	var rep v1alpha1.StatusReport
	if err := json.Unmarshal(out, &rep); err != nil {
		panic(err)
	}
	cell := rep.Image("team/app:1").On("node-1")
	fmt.Println(cell.State, cell.Reason)
	// Output: pulling Waiting
}

// A lock entry of a multi-platform image, as stowage.lock.yaml holds it.
func ExampleImageLockEntry() {
	e := v1alpha1.ImageLockEntry{
		Name:      "docker.io/library/busybox:1.36",
		Reference: "busybox:1.36",
		Digest:    "sha256:" + fmt.Sprintf("%064x", 1),
		Kind:      v1alpha1.KindIndex,
		Platforms: []v1alpha1.ImageLockPlatform{{Platform: "linux/amd64", Digest: "sha256:" + fmt.Sprintf("%064x", 2), Size: 2407}},
	}
	b, _ := json.Marshal(e)
	fmt.Println(string(b))
	// Output: {"name":"docker.io/library/busybox:1.36","reference":"busybox:1.36","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000001","kind":"index","platforms":[{"platform":"linux/amd64","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000002","size":2407}]}
}
