// Package fn is stowage as a KRM function (the kustomize functions
// specification: a ResourceList in on stdin, a ResourceList with results out
// on stdout). It validates its functionConfig with the same CUE schema and
// typed config as the CLI, takes digests from an ImageLock item of the
// ResourceList (never from a registry), appends the rendered objects, and
// pins every image of the other workloads in the ResourceList ("pin mode").
//
// Problems a user can fix are results (severity, message, resourceRef,
// field, file) and make the function exit non-zero; only broken plumbing is
// a plain error.
//
// A function binary of its own, in another module, is
//
//	func main() { os.Exit(fn.Main()) }
//
// (Main: the config-evaluation child, stowage's flags, errors on stderr,
// exit codes); NewCommand is the command alone, for a program that
// composes it.
package fn

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/fn/runtime/runtimeutil"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/confined"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/schema"
)

// Kinds of functionConfig the function accepts.
const (
	// APIVersion and Kind of stowage's own functionConfig: the config of a
	// config directory under spec, plus spec.profile naming the profile to
	// render.
	APIVersion = "stowage.dev/v1alpha1"
	Kind       = "Stowage"
	// SubmarineAPIVersion and SubmarineKind are the JupyterImagePuller of
	// the Submarine design (apache/submarine "Add a CRD to install and
	// control jupyter image in k8s"), accepted as its seed writes it.
	SubmarineAPIVersion = "org.apache.submarine/v1"
	SubmarineKind       = "JupyterImagePuller"

	// AllowInlinePasswordsAnnotation, set to "true" on a JupyterImagePuller,
	// accepts its inline auth.password values (with a warning each).
	AllowInlinePasswordsAnnotation = "stowage.dev/allow-inline-passwords"

	// HelperImageAnnotation, HelperPauseAnnotation and SiteRegistryAnnotation
	// on a JupyterImagePuller (whose spec has no such fields) set the
	// config's helper.image, helper.pause and site.registry.
	HelperImageAnnotation  = "stowage.dev/helper-image"
	HelperPauseAnnotation  = "stowage.dev/helper-pause"
	SiteRegistryAnnotation = "stowage.dev/site-registry"

	// VerifyAnnotation on a JupyterImagePuller is the verify policy of its
	// profile (profiles.NAME.verify), written as a YAML or JSON mapping
	// of the config's verify fields: `{keys: [keys/release.pub]}`, or
	// `{identities: [{identity: …, issuer: …}], trustedRoot:
	// trust/trusted_root.json}`, paths inside the config directory. `stowage
	// lock` verifies the puller's images under it; the schema checks it,
	// errors naming the annotation.
	VerifyAnnotation = "stowage.dev/verify"
)

// Processor is the stowage KRM function. Getenv reads the password sources
// "env:NAME"; nil means os.LookupEnv.
type Processor struct {
	// Getenv reads an "env:NAME" password source: its value and whether it
	// is set; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// Dir resolves "file:" password sources; "" is the working directory
	// (kustomize runs exec functions in the kustomization's directory).
	Dir string
	// AllowEnv, when not nil, narrows the operator's rule (creds.Allowed:
	// STOWAGE_* and the names of STOWAGE_ALLOW_ENV) to STOWAGE_* and the
	// names listed here; it comes from the command line (--allow-env, in
	// the exec declaration's args), never from the functionConfig, and can
	// never widen the operator's rule.
	AllowEnv []string
	// Stderr receives the warning and error results as
	// `file:line: field: message` lines; nil writes none.
	Stderr io.Writer
	// CheckOnly renders without reading a password: each source is only
	// checked the way render would refuse it (stowage vet on a
	// kustomization; render.Placeholders(true)).
	CheckOnly bool
	// ConfigOptions are added to every config load of the function
	// (schema.WithLimits, schema.WithChild); nil loads with schema's
	// defaults, in this process.
	ConfigOptions []schema.Option
}

// Process implements framework.ResourceListProcessor: validate the
// functionConfig, read the ImageLock item, render and pin. It sets
// rl.Results and returns them as the error when any has error severity, so
// the function exits non-zero.
func (p *Processor) Process(rl *framework.ResourceList) error {
	s := &session{p: p, rl: rl}
	s.run()
	rl.Results = append(rl.Results, s.results...)
	strict(rl.FunctionConfig, rl.Results)
	sortResults(rl.Results)
	p.report(p.Stderr, rl.FunctionConfig, rl.Results)
	for _, r := range rl.Results {
		if r.Severity == framework.Error {
			return rl.Results
		}
	}
	return nil
}

// session is one run of the function.
type session struct {
	p       *Processor
	rl      *framework.ResourceList
	results framework.Results
	// site is the site registry pin mode rewrites workloads' images to:
	// the rendered profile's, or the config's top-level one without
	// profiles; nil for none.
	site *v1alpha1.Site
}

func (s *session) getenv(k string) (string, bool) {
	if s.p.Getenv != nil {
		return s.p.Getenv(k)
	}
	return os.LookupEnv(k)
}

func (s *session) run() {
	fc := s.rl.FunctionConfig
	if fc == nil {
		s.errorf(nil, "", "no functionConfig: declare the function on a %s/%s or %s/%s object", APIVersion, Kind, SubmarineAPIVersion, SubmarineKind)
		return
	}
	if err := DeclaredEnv(fc); err != nil {
		s.errorf(fc, "metadata.annotations."+runtimeutil.FunctionAnnotationKey, "%v", err)
		return
	}
	// Without a lock nothing is rendered or pinned, but the
	// functionConfig is still read, so that its problems are reported
	// beside the missing lock instead of behind it.
	l, _ := s.readLock()
	// VersionedAPIProcessor reads apiVersion and kind with RNode.String,
	// which keeps the quotes of a quoted scalar (`"apiVersion": "v1"` in a
	// JSON-style functionConfig gives "\"v1\""): make them plain first.
	for _, f := range []string{"apiVersion", "kind"} {
		if n := fc.Field(f); n != nil && n.Value.YNode().Kind == yaml.ScalarNode {
			n.Value.YNode().Style = 0
		}
	}
	kinds := framework.GVKFilterMap{
		Kind:          {APIVersion: &api{s: s, l: l, config: s.stowage}},
		SubmarineKind: {SubmarineAPIVersion: &api{s: s, l: l, config: s.submarine}},
	}
	id := identity(fc)
	if _, err := kinds.ProviderFor(id.APIVersion, id.Kind); err != nil {
		s.errorf(fc, "", "functionConfig %s/%s is not a kind stowage reads; use %s/%s or %s/%s",
			id.APIVersion, id.Kind, APIVersion, Kind, SubmarineAPIVersion, SubmarineKind)
		return
	}
	// The kind is known: what fails now is kyaml's decoding of the
	// functionConfig as JSON-compatible data (framework.LoadFunctionConfig).
	if err := (&framework.VersionedAPIProcessor{FilterProvider: kinds}).Process(s.rl); err != nil {
		s.errorf(fc, "", "functionConfig %s %s cannot be decoded (%v): keep to plain YAML data (string keys; no .nan, .inf or binary values)", id.Kind, id.Name, err)
	}
}

// operatorVariables are the variables only the operator sets.
var operatorVariables = []string{creds.AllowVariable, MaxInputVariable, MaxMemoryVariable}

// DeclaredEnv refuses a functionConfig whose function annotation
// (config.kubernetes.io/function, read with runtimeutil.GetFunctionSpec)
// sets creds.AllowVariable, MaxInputVariable or MaxMemoryVariable in its
// exec or container envs: kustomize passes
// those to the function after the operator's environment, so the
// repository would set the operator's rule. Nil without an annotation or
// when it does not parse (kustomize itself refuses that).
func DeclaredEnv(fc *yaml.RNode) error {
	spec, err := runtimeutil.GetFunctionSpec(fc)
	if err != nil || spec == nil {
		return nil
	}
	for _, e := range append(slices.Clone(spec.Exec.Env), spec.Container.Env...) {
		name, _, _ := strings.Cut(e, "=")
		if name = strings.TrimSpace(name); slices.Contains(operatorVariables, name) {
			return fmt.Errorf("the function declaration sets %s in its envs: that variable is the operator's (the CI job's or repository server's environment, or kustomize build --env), never the repository's", name)
		}
	}
	return nil
}

// api is the kio.Filter of one functionConfig kind: read the config from
// the functionConfig, render its profile, pin the workloads, append what
// was rendered. It has no exported fields, so framework.LoadFunctionConfig
// decodes nothing into it; config reads the functionConfig itself,
// strictly.
type api struct {
	s *session
	// l is the lock; nil when readLock refused the input's.
	l      *lock.Lock
	config func(fc *yaml.RNode) (c fnConfig, ok bool)
}

// fnConfig is what a functionConfig says: the config and the profile the
// function renders.
type fnConfig struct {
	cfg *v1alpha1.Config
	// profile is the profile to render; "" picks the only one.
	profile string
	// pinOnly is set for a config without profiles: nothing is rendered.
	pinOnly bool
	// passwordFields map the config's place of each password source
	// (v1alpha1.Config.PasswordAt: a place in the functionConfig's text
	// as kyaml passes it, or in the config a JupyterImagePuller is
	// converted to) to the functionConfig's field it is written at, so
	// that results are located in the file.
	passwordFields map[v1alpha1.Position]string
}

// Filter implements kio.Filter; problems are results, never an error.
func (a *api) Filter(items []*yaml.RNode) ([]*yaml.RNode, error) {
	fc := a.s.rl.FunctionConfig
	c, ok := a.config(fc)
	if a.l == nil {
		return items, nil // readLock said why
	}
	var rendered []*yaml.RNode
	if ok {
		var err error
		a.s.site, err = c.site()
		switch {
		case err != nil && c.pinOnly:
			a.s.errorf(fc, "spec.site.registry", "%v", err)
			return items, nil
		case !c.pinOnly:
			// A profile's site error is render's (plan.Build reports it).
			rendered = a.s.render(fc, c, a.l)
		}
	}
	var places []v1alpha1.ImagePlace
	if ok {
		places = c.cfg.ImagePlaces
	}
	a.s.pin(a.l, places)
	return append(items, rendered...), nil
}

// site is the site registry pin mode rewrites workloads' images to, by
// plan.Site's rule: the rendered profile's, or the config's top-level one
// without profiles; nil for none.
func (c fnConfig) site() (*v1alpha1.Site, error) {
	if c.pinOnly {
		return plan.Site(c.cfg)
	}
	return plan.Site(c.cfg, c.profile)
}

// readLock finds the ImageLock item. Without one, pin mode and render have
// no digests: an error result says how to add it.
func (s *session) readLock() (*lock.Lock, bool) {
	var found []*yaml.RNode
	for _, it := range s.rl.Items {
		if id := identity(it); id.APIVersion == lock.APIVersion && id.Kind == lock.ObjectKind {
			found = append(found, it)
		}
	}
	switch len(found) {
	case 0:
		s.errorf(nil, "", "no %s/%s in the input: list %s in the kustomization's resources (it is local-config, so kustomize does not emit it)",
			lock.APIVersion, lock.ObjectKind, lock.FileName)
		return nil, false
	case 1:
	default:
		s.errorf(found[1], "", "%d ImageLock objects in the input; keep one", len(found))
		return nil, false
	}
	path, _ := fileOf(found[0])
	if path == "" {
		path = lock.FileName
	} else if filepath.IsLocal(path) {
		// kustomize reads a lock only beneath the kustomization's
		// directory, and so does the function: never through a link
		// that leads out of it (the function runs in that directory).
		dir := s.p.Dir
		if dir == "" {
			dir = "."
		}
		if _, err := confined.CheckFile(dir, path, confined.Lock); errors.Is(err, confined.ErrOutside) {
			s.errorf(nil, "", "the lock %s leads out of the kustomization's directory through a symbolic link: stowage reads a lock only beneath that directory", path)
			return nil, false
		}
	}
	// The item's tree is parsed already: the lock decodes it as it is, and
	// its errors name the line in the item as the user wrote it (kustomize's
	// internal annotations, which the file does not have, not counted).
	n := found[0].YNode()
	l, err := lock.ParseNode(n, path, itemLines(n))
	if err != nil {
		s.errorf(found[0], "", "%v", err)
		return nil, false
	}
	return l, true
}

// itemLines maps a line of the ResourceList stream inside the item n to
// its line in the item written alone (1 for its first key) without the
// internal annotations kustomize added (internalAnnotation), and without
// metadata.annotations itself when they were all there was.
func itemLines(n *yaml.Node) func(int) int {
	start := n.Line
	var dropped []int // stream lines that the item as written lacks
	if _, md := mapEntry(n, "metadata"); md != nil {
		if key, ann := mapEntry(md, "annotations"); ann != nil && ann.Kind == yaml.MappingNode {
			all := true
			for i := 0; i+1 < len(ann.Content); i += 2 {
				if k := ann.Content[i]; internalAnnotation(k.Value) {
					dropped = append(dropped, k.Line)
				} else {
					all = false
				}
			}
			if all && len(dropped) > 0 {
				dropped = append(dropped, key.Line)
			}
		}
	}
	return func(line int) int {
		out := line - start + 1
		for _, d := range dropped {
			if d < line {
				out--
			}
		}
		return out
	}
}

// mapEntry is the key node and value of key in the mapping m, nils when m
// is not a mapping or lacks key.
func mapEntry(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// internalAnnotation reports whether k is one of the annotations kustomize
// adds to items for its own bookkeeping: internal.config.kubernetes.io/*
// and the legacy config.kubernetes.io/path, index and id.
func internalAnnotation(k string) bool {
	switch k {
	case kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation, kioutil.LegacyIdAnnotation:
		return true
	}
	return strings.HasPrefix(k, "internal.config.kubernetes.io/")
}

// identity returns the apiVersion, kind, namespace and name of n.
func identity(n *yaml.RNode) yaml.ResourceIdentifier {
	m, _ := n.GetMeta()
	return yaml.ResourceIdentifier{
		TypeMeta: yaml.TypeMeta{APIVersion: m.APIVersion, Kind: m.Kind},
		NameMeta: yaml.NameMeta{Name: m.Name, Namespace: m.Namespace},
	}
}

// fileOf returns the file and index kustomize recorded for n
// (kioutil.GetFileAnnotations: internal annotations first, then legacy).
func fileOf(n *yaml.RNode) (string, int) {
	path, idx, _ := kioutil.GetFileAnnotations(n)
	i, _ := strconv.Atoi(idx)
	return path, i
}

// result builds a result about n (nil: about the input as a whole) at
// field path.
func (s *session) result(sev framework.Severity, n *yaml.RNode, field, msg string) {
	r := framework.Result{Severity: sev, Message: msg}
	if n != nil {
		id := identity(n)
		r.ResourceRef = &id
		if path, idx := fileOf(n); path != "" {
			r.File = &framework.File{Path: path, Index: idx}
		}
	}
	if field != "" {
		r.Field = &framework.Field{Path: field}
	}
	s.results = append(s.results, &r)
}

func (s *session) errorf(n *yaml.RNode, field, format string, args ...any) {
	s.result(framework.Error, n, field, fmt.Sprintf(format, args...))
}

func (s *session) warnf(n *yaml.RNode, field, format string, args ...any) {
	s.result(framework.Warning, n, field, fmt.Sprintf(format, args...))
}

// sortResults orders results by severity, file, field and message so that
// the output is the same on every run.
func sortResults(rs framework.Results) {
	key := func(r *framework.Result) string {
		var b strings.Builder
		b.WriteString(string(r.Severity))
		if r.File != nil {
			fmt.Fprintf(&b, "\x00%s\x00%08d", r.File.Path, r.File.Index)
		}
		if r.Field != nil {
			b.WriteString("\x00" + r.Field.Path)
		}
		b.WriteString("\x00" + r.Message)
		return b.String()
	}
	sort.SliceStable(rs, func(i, j int) bool { return key(rs[i]) < key(rs[j]) })
}

// Config is what a functionConfig says, read without rendering
// (Processor.ReadConfig).
type Config struct {
	// Config is the typed config: a Stowage's spec, or a JupyterImagePuller
	// converted to one profile named after the object.
	Config *v1alpha1.Config
	// Profile is the profile the function renders ("" picks the only one).
	Profile string
	// PinOnly is set for a Stowage without profiles: the function renders
	// nothing and only pins.
	PinOnly bool
}

// ReadConfig reads functionConfig fc (a Stowage or a JupyterImagePuller)
// exactly as the function does, for the CLI commands that take a
// kustomization (lock, bump, vet, mirror): the same checks, the same
// results (sorted, stowage.dev/strict applied, written to p.Stderr as
// `file:line: field: message` lines). ok is false when a result is an
// error; the Config is then empty.
func (p *Processor) ReadConfig(fc *yaml.RNode) (c Config, rs framework.Results, ok bool) {
	s := &session{p: p, rl: &framework.ResourceList{FunctionConfig: fc}}
	var got fnConfig
	switch id := identity(fc); {
	case id.APIVersion == APIVersion && id.Kind == Kind:
		got, ok = s.stowage(fc)
	case id.APIVersion == SubmarineAPIVersion && id.Kind == SubmarineKind:
		got, ok = s.submarine(fc)
	default:
		s.errorf(fc, "", "functionConfig %s/%s is not a kind stowage reads; use %s/%s or %s/%s",
			id.APIVersion, id.Kind, APIVersion, Kind, SubmarineAPIVersion, SubmarineKind)
	}
	rs = s.results
	strict(fc, rs)
	sortResults(rs)
	p.report(p.Stderr, fc, rs)
	for _, r := range rs {
		if r.Severity == framework.Error {
			ok = false
		}
	}
	if !ok {
		return Config{}, rs, false
	}
	return Config{Config: got.cfg, Profile: got.profile, PinOnly: got.pinOnly}, rs, true
}

// IsFunctionConfig reports whether n is an object of a kind the function
// reads as its functionConfig (Stowage or JupyterImagePuller, by apiVersion
// and kind).
func IsFunctionConfig(n *yaml.RNode) bool {
	id := identity(n)
	return id.APIVersion == APIVersion && id.Kind == Kind ||
		id.APIVersion == SubmarineAPIVersion && id.Kind == SubmarineKind
}
