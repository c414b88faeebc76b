package fn

import (
	"errors"
	"maps"
	"slices"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/pipeline"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/schema"
)

// stowage handles the stowage.dev/v1alpha1 Stowage functionConfig: spec is
// the config of a config directory, spec.profile the profile to render. A
// spec without profiles renders nothing and only pins (pin mode).
func (s *session) stowage(fc *yaml.RNode, l *lock.Lock) []*yaml.RNode {
	profile := ""
	if n, err := fc.Pipe(yaml.Lookup("spec", "profile")); err == nil && n != nil {
		profile = yaml.GetValue(n)
	}
	path, _ := fileOf(fc)
	if path == "" {
		path = "functionConfig"
	}
	str, err := fc.String()
	if err != nil {
		s.errorf(fc, "", "cannot read the functionConfig: %v", err)
		return nil
	}
	cfg, err := schema.LoadEmbedded(s.p.Dir, path, []byte(str), "spec", []string{"profile"},
		schema.Options{AllowNoProfiles: true})
	if err != nil {
		s.configErrors(fc, "spec.", err)
		return nil
	}
	if cfg.Site != nil && cfg.Site.Registry != "" {
		s.site = cfg.Site
	}
	if _, prof, err := cfg.Profile(profile); err == nil {
		s.site = prof.Site
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Images)) {
		if hint := portAsPath(cfg.Images[k].Reference); hint != "" {
			s.warnf(fc, "spec.images."+k+".reference", "%s", hint)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Environments)) {
		if hint := portAsPath(cfg.Environments[k].Image); hint != "" {
			s.warnf(fc, "spec.environments."+k+".image", "%s", hint)
		}
	}
	if len(cfg.Profiles) == 0 {
		if profile != "" {
			s.errorf(fc, "spec.profile", "profile %q is named but spec has no profiles", profile)
		}
		return nil
	}
	return s.render(fc, cfg, profile, l)
}

// configErrors turns schema errors into results on fc; prefix maps the
// config's field paths to the functionConfig's.
func (s *session) configErrors(fc *yaml.RNode, prefix string, err error) {
	var es schema.Errors
	if !errors.As(err, &es) {
		s.errorf(fc, "", "%v", err)
		return
	}
	for _, e := range es {
		field := ""
		if e.Path != "" {
			field = prefix + e.Path
		}
		s.errorf(fc, field, "%s", e.Msg)
	}
}

// render renders profile of cfg with l through pipeline.Render and
// returns the objects as nodes.
func (s *session) render(fc *yaml.RNode, cfg *schema.Config, profile string, l *lock.Lock) []*yaml.RNode {
	if _, _, err := cfg.Profile(profile); err != nil {
		s.errorf(fc, "spec.profile", "%v", err)
		return nil
	}
	objs, err := pipeline.Render(cfg, profile, l, pipeline.Options{Dir: s.p.Dir, Getenv: s.getenv, Function: true, AllowEnv: s.p.AllowEnv})
	if err != nil {
		s.errorf(fc, "", "%v", err)
		return nil
	}
	var out []*yaml.RNode
	for _, o := range objs {
		b, err := render.Marshal(o)
		if err != nil {
			s.errorf(fc, "", "%v", err)
			continue
		}
		n, err := yaml.Parse(string(b))
		if err != nil {
			s.errorf(fc, "", "%v", err)
			continue
		}
		out = append(out, n)
	}
	if len(out) == 0 && len(s.results) == 0 {
		s.warnf(fc, "spec.profile", "profile %q renders no objects", profile)
	}
	return out
}
