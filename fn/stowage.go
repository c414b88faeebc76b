package fn

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/lock"
	engine "github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/render"
	"github.com/stowage/stowage/schema"
)

// stowage reads the stowage.dev/v1alpha1 Stowage functionConfig: spec is
// the config of a config directory, spec.profile the profile to render. A
// spec without profiles renders nothing and only pins (pin mode). Problems
// are results; ok is false when one is an error.
func (s *session) stowage(fc *yaml.RNode) (fnConfig, bool) {
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
		return fnConfig{}, false
	}
	cfg, err := schema.LoadEmbedded(s.p.Dir, path, []byte(str), "spec", []string{"profile"},
		append([]schema.Option{schema.Options{AllowNoProfiles: true}}, s.p.ConfigOptions...)...)
	if err != nil {
		s.configErrors(fc, "spec.", err)
		return fnConfig{}, false
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Images)) {
		im := cfg.Images[k]
		if hint := portAsPath(im.Reference); hint != "" {
			s.warnf(fc, "spec.images."+k+".reference", "%s", hint)
		}
		for _, v := range im.ByNodeLabel.Values() {
			if hint := portAsPath(im.ByNodeLabel.References[v]); hint != "" {
				s.warnf(fc, "spec.images."+k+".byNodeLabel.references."+v, "%s", hint)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Environments)) {
		env := cfg.Environments[k]
		if hint := portAsPath(env.Image); hint != "" {
			s.warnf(fc, "spec.environments."+k+".image", "%s", hint)
		}
		for _, v := range env.ByNodeLabel.Values() {
			if hint := portAsPath(env.ByNodeLabel.References[v]); hint != "" {
				s.warnf(fc, "spec.environments."+k+".byNodeLabel.references."+v, "%s", hint)
			}
		}
	}
	fields := map[v1alpha1.Position]string{}
	for _, k := range slices.Sorted(maps.Keys(cfg.Environments)) {
		if at := cfg.PasswordAt("environments", k); !at.IsZero() {
			fields[at] = "spec.environments." + k + ".auth.password"
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Images)) {
		if at := cfg.PasswordAt("images", k); !at.IsZero() {
			fields[at] = "spec.images." + k + ".auth.password"
		}
	}
	if len(cfg.Profiles) == 0 {
		if profile != "" {
			s.errorf(fc, "spec.profile", "profile %q is named but spec has no profiles", profile)
			return fnConfig{}, false
		}
		return fnConfig{cfg: cfg, pinOnly: true}, true
	}
	if _, _, err := cfg.Profile(profile); err != nil {
		s.errorf(fc, "spec.profile", "%v", err)
		return fnConfig{}, false
	}
	return fnConfig{cfg: cfg, profile: profile, passwordFields: fields}, true
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

// render renders profile of cfg with l as `stowage render` does, the
// passwords read under the function's rule (render.ReadNeeded with
// render.FunctionRule; only checked, with render.Placeholders, when
// s.p.CheckOnly), and returns the objects as nodes.
//
// Each password problem (creds.Problems) at a password's place in the
// config (c.passwordFields) becomes its own result at the
// functionConfig's field, so that it is located in the functionConfig's
// file and line.
func (s *session) render(fc *yaml.RNode, c fnConfig, l *lock.Lock) []*yaml.RNode {
	cfg, profile := c.cfg, c.profile
	opts := []render.ReadOption{render.FunctionRule(s.p.AllowEnv)}
	if s.p.CheckOnly {
		opts = append(opts, render.Placeholders(true))
	}
	pw, trust, err := render.ReadNeeded(s.p.Dir, cfg, profile, s.getenv, opts...)
	var objs []render.Object
	if err == nil {
		objs, err = render.Render(render.Input{Config: cfg, Lock: l.Object(), Profile: profile, Passwords: pw, Trust: trust})
	}
	if err != nil {
		var problems creds.Problems
		if !errors.As(err, &problems) {
			s.errorf(fc, "", "%v", err)
			return nil
		}
		var rest []string
		for _, p := range problems {
			if field, ok := c.passwordFields[p.At]; ok {
				s.errorf(fc, field, "%s", p.Msg)
				continue
			}
			rest = append(rest, p.Error())
		}
		if len(rest) > 0 {
			s.errorf(fc, "", "%s", strings.Join(rest, "\n"))
		}
		return nil
	}
	var out []*yaml.RNode
	for _, o := range objs {
		b, err := engine.Marshal(engine.Object(o))
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
