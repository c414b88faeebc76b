package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/testing/offlineimage"
)

// writeFnInput writes to path the ResourceList kustomize would send `stowage
// fn` in pin mode for n Deployments of one container each, every one a
// distinct image ("registry.example/team/app-NNNNN:1"), with the ImageLock
// item holding the n stand-in entries (internal/testing/offlineimage) and a
// functionConfig without profiles.
func writeFnInput(path string, n int) error {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n")
	l := &lock.Lock{}
	for i := range n {
		ref := fmt.Sprintf("registry.example/team/app-%05d:1", i)
		e, err := offlineimage.Entry(ref)
		if err != nil {
			return err
		}
		l.Put(e)
		fmt.Fprintf(&b, "- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: app-%05d\n    namespace: shop\n"+
			"    annotations:\n      config.kubernetes.io/index: '%d'\n      internal.config.kubernetes.io/path: app.yaml\n"+
			"  spec:\n    selector:\n      matchLabels:\n        app: app-%05d\n    template:\n      metadata:\n        labels:\n          app: app-%05d\n"+
			"      spec:\n        containers:\n        - name: app\n          image: %s\n", i, i, i, i, ref)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(l.Marshal()), "\n"), "\n") {
		if i == 0 {
			b.WriteString("- " + line + "\n")
		} else {
			b.WriteString("  " + line + "\n")
		}
	}
	b.WriteString("functionConfig:\n  apiVersion: stowage.dev/v1alpha1\n  kind: Stowage\n  metadata:\n    name: pin\n  spec: {}\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
