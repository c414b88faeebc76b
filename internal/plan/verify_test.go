package plan

import (
	"testing"

	"github.com/stowage/stowage/api/v1alpha1"
)

// TestVerifyPolicy: an image's or environment's own policy wins over its
// profile's, a profile's over the top level's; a workload (no profile)
// and a profile without one take the top level's; nothing applies without
// any.
func TestVerifyPolicy(t *testing.T) {
	t.Parallel()
	top, prof, img, env := &v1alpha1.Verify{Keys: []string{"top"}}, &v1alpha1.Verify{Keys: []string{"prof"}},
		&v1alpha1.Verify{Keys: []string{"img"}}, &v1alpha1.Verify{Keys: []string{"env"}}
	cfg := &v1alpha1.Config{
		Verify:       top,
		Images:       map[string]v1alpha1.Image{"own": {Verify: img}, "plain": {}},
		Environments: map[string]v1alpha1.Environment{"jupyter": {Verify: env}, "bare": {}},
		Profiles:     map[string]v1alpha1.Profile{"edge": {Verify: prof}, "lab": {}},
	}
	for _, c := range []struct {
		u    Use
		at   string
		want *v1alpha1.Verify
	}{
		{Use{Profile: "edge", Kind: KindImage, Name: "own"}, "images.own.verify", img},
		{Use{Profile: "edge", Kind: KindEnvironment, Name: "jupyter"}, "environments.jupyter.verify", env},
		{Use{Profile: "edge", Kind: KindImage, Name: "plain"}, "profiles.edge.verify", prof},
		{Use{Profile: "edge", Kind: KindEnvironment, Name: "bare"}, "profiles.edge.verify", prof},
		{Use{Profile: "edge", Kind: KindHelper}, "profiles.edge.verify", prof},
		{Use{Profile: "edge", Kind: KindOpenPAI, Name: "master"}, "profiles.edge.verify", prof},
		{Use{Profile: "lab", Kind: KindImage, Name: "plain"}, "verify", top},
		{Use{Profile: "lab", Kind: KindPause}, "verify", top},
		{Use{Kind: KindWorkload, Name: "Pod web spec.containers[0].image"}, "verify", top},
	} {
		at, v := VerifyPolicy(cfg, &c.u)
		if at != c.at || v != c.want {
			t.Errorf("%+v: %q %v, want %q %v", c.u, at, v, c.at, c.want)
		}
	}
	cfg.Verify = nil
	if at, v := VerifyPolicy(cfg, &Use{Profile: "lab", Kind: KindImage, Name: "plain"}); at != "" || v != nil {
		t.Errorf("no policy: %q %v", at, v)
	}
}
