package status

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/render"
)

// ExpectSource is what status checks for the profile of src, the config
// directory or kustomization dir as the CLI loaded it: the profile
// rendered through the one pipeline with placeholder passwords (status
// never reads one), its DaemonSets paired with the image plan (Expect).
// For a kustomization the profile is its functionConfig's first (profile
// narrows it) and the lock the file its resources list. Errors: the
// source's, the lock's and render's, and a functionConfig without
// profiles.
func ExpectSource(dir string, src *source.Source, profile string) (*Expected, error) {
	if src.Kustomization != nil {
		ps, err := src.Profiles(profile)
		if err != nil {
			return nil, err
		}
		if len(ps) == 0 {
			return nil, fmt.Errorf("the functionConfig of %s has no profiles: the function only pins, and no DaemonSet pre-pulls anything to check", src.Kustomization.File)
		}
		profile = ps[0]
	}
	lf, err := src.ReadLock(nil)
	if err != nil {
		return nil, err
	}
	p, err := plan.Build(src.Config, profile, lf.Lock)
	if err != nil {
		return nil, err
	}
	pw, trust, err := render.ReadNeeded(dir, src.Config, profile, nil, render.Placeholders(false))
	if err != nil {
		return nil, err
	}
	objs, err := render.Render(render.Input{Config: src.Config, Lock: lf.Lock.Object(), Profile: profile, Passwords: pw, Trust: trust})
	if err != nil {
		return nil, err
	}
	var dss []*appsv1.DaemonSet
	for _, obj := range objs {
		if ds, ok := obj.Object.(*appsv1.DaemonSet); ok {
			dss = append(dss, ds)
		}
	}
	return Expect(p, dss)
}
