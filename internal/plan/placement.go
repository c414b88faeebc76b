package plan

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
	corev1 "k8s.io/api/core/v1"
)

// Placement is the node labels u's pre-pull pod needs beyond its puller's
// nodeSelector, as render places it: an environment's or a byNodeLabel
// image's own selector (Use.NodeSelector), an OpenPAI role's label
// (pai-<role>=true) unless OpenPAI runs the image on every node, and the
// kubernetes.io/os and kubernetes.io/arch of a single requested platform
// (a child of one platform runs only there; the use's own selector wins
// over them). nil for a use placed on every node of its puller (the
// helper and pause images among them). A new map each call.
func (u *Use) Placement() map[string]string {
	var own map[string]string
	switch u.Kind {
	case KindEnvironment, KindImage:
		own = u.NodeSelector
	case KindOpenPAI:
		if !u.EveryNode {
			own = map[string]string{"pai-" + u.Name: "true"}
		}
	}
	var sel map[string]string
	if len(u.Platforms) == 1 {
		if pl, err := v1.ParsePlatform(u.Platforms[0]); err == nil {
			sel = map[string]string{corev1.LabelOSStable: pl.OS, corev1.LabelArchStable: pl.Architecture}
		}
	}
	if len(own) == 0 && sel == nil {
		return nil
	}
	if sel == nil {
		sel = map[string]string{}
	}
	for k, v := range own {
		sel[k] = v
	}
	return sel
}
