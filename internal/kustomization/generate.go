package kustomization

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/fn/runtime/runtimeutil"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// OwnFunctionPath is the exec path of stowage's own function as a
// kustomization declares it: the bare name, which kustomize looks up on
// the operator's PATH.
const OwnFunctionPath = "stowage"

// OwnFunctionCommand is the first exec arg of stowage's own function: the
// fn command.
const OwnFunctionCommand = "fn"

// Generate builds the whole kustomization in dir as `kustomize build
// --enable-alpha-plugins --enable-exec` would, for Argo CD's plugin, and
// returns kustomize's YAML stream. It reads the same in-memory copy of
// root ("" is dir) as Load, under the same bounds and refusals (remote
// resources and bases, helmCharts, links out of root, any generator,
// transformer or validator besides kustomize's builtins and the stowage
// functionConfig, in every kustomization reached), and runs one program
// only: exe (the running stowage executable, absolute), as the stowage
// function, in dir.
//
// The functionConfig's declaration must be stowage's own (OwnExec); the
// declared path is replaced by exe, so neither the repository nor PATH
// chooses the program. Helm stays disabled. When ctx ends first, Generate
// returns an error wrapping ErrDeadline and ctx's cause; the build is then
// abandoned (kustomize cannot be cancelled) and the process is expected to
// exit. A panic in kustomize is returned as an error.
func Generate(ctx context.Context, dir, root string, isFunction func(*yaml.RNode) bool, exe string) ([]byte, error) {
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := generate(dir, root, isFunction, exe)
		done <- result{out, err}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("kustomization %s: %w (%w)", dir, ErrDeadline, context.Cause(ctx))
	}
}

// generate is Generate without the context.
func generate(dir, root string, isFunction func(*yaml.RNode) bool, exe string) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("kustomization %s: kustomize failed on it (%v); check its files' syntax (metadata.annotations and labels are mappings)", dir, r)
		}
	}()
	if !filepath.IsAbs(exe) {
		return nil, fmt.Errorf("the stowage executable %q is not an absolute path", exe)
	}
	l, err := open(dir, root, MaxEntries, isFunction)
	if err != nil {
		return nil, err
	}
	at, err := l.findFunction(isFunction)
	if err != nil {
		return nil, err
	}
	spec, err := OwnExec(l.b.FunctionConfig, l.b.FunctionFile, exe)
	if err != nil {
		return nil, err
	}
	if err := l.runOwn(at, spec, exe); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionUnspecified // the CLI's, without --reorder
	pc := types.EnabledPluginConfig(types.BploUseStaticallyLinked)
	pc.FnpLoadingOptions = types.FnPluginLoadingOptions{EnableExec: true}
	pc.HelmConfig = types.HelmConfig{}
	opts.PluginConfig = pc
	m, err := krusty.MakeKustomizer(opts).Run(l.c.mem, l.top)
	if err != nil {
		return nil, fmt.Errorf("kustomize build of %s: %w", dir, l.c.explain(err))
	}
	out, err = m.AsYaml()
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, fmt.Errorf("kustomize build of %s gave no objects", dir)
	}
	return out, nil
}

// OwnExec checks that the functionConfig fc (read from file, for messages)
// declares stowage's own function and returns its exec declaration: an
// exec function (no container, no starlark) whose path is
// OwnFunctionPath, or an absolute path to the same file as exe, whose
// first arg is OwnFunctionCommand, with no envs (the function's
// environment is the operator's). Errors name the file, the annotation's
// line and field.
func OwnExec(fc *yaml.RNode, file, exe string) (*runtimeutil.ExecSpec, error) {
	line := 0
	if n, err := fc.Pipe(yaml.Lookup("metadata", "annotations", runtimeutil.FunctionAnnotationKey)); err == nil && n != nil {
		line = n.YNode().Line
	}
	where := fmt.Sprintf("%s:%d: metadata.annotations.%s", file, line, runtimeutil.FunctionAnnotationKey)
	spec, err := runtimeutil.GetFunctionSpec(fc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	want := fmt.Sprintf("stowage runs only its own function, declared as exec: {path: %s, args: [%s, …]}", OwnFunctionPath, OwnFunctionCommand)
	switch {
	case spec == nil:
		return nil, fmt.Errorf("%s: missing; %s", where, want)
	case spec.Container.Image != "":
		return nil, fmt.Errorf("%s: container image %q: a container function is never run here; %s", where, spec.Container.Image, want)
	case spec.Exec.Path == "":
		return nil, fmt.Errorf("%s: not an exec function; %s", where, want)
	case !ownPath(spec.Exec.Path, exe):
		return nil, fmt.Errorf("%s: exec.path %q is not stowage's own executable; %s", where, spec.Exec.Path, want)
	case len(spec.Exec.Args) == 0 || spec.Exec.Args[0] != OwnFunctionCommand:
		return nil, fmt.Errorf("%s: exec.args %q do not start with %s; %s", where, spec.Exec.Args, OwnFunctionCommand, want)
	case len(spec.Exec.Env) > 0:
		return nil, fmt.Errorf("%s: exec.envs: the function's environment is the operator's, never the repository's; remove envs", where)
	}
	return &spec.Exec, nil
}

// ownPath reports whether p, an exec path, names stowage's own
// executable: OwnFunctionPath, or an absolute path to the same file as exe.
func ownPath(p, exe string) bool {
	if p == OwnFunctionPath {
		return true
	}
	if !filepath.IsAbs(p) {
		return false
	}
	a, err := os.Stat(p)
	if err != nil {
		return false
	}
	b, err := os.Stat(exe)
	return err == nil && os.SameFile(a, b)
}

// runOwn rewrites, in the copy, the declaration of the stowage function at
// transformers[at] to run exe with spec's args: in the file it was read
// from, or inline in the kustomization file.
func (l *loading) runOwn(at int, spec *runtimeutil.ExecSpec, exe string) error {
	decl, err := sigsyaml.Marshal(map[string]any{"exec": map[string]any{"path": exe, "args": spec.Args}})
	if err != nil {
		return err
	}
	set := func(o *yaml.RNode) error {
		if err := o.PipeE(yaml.ClearAnnotation("config.k8s.io/function")); err != nil {
			return err
		}
		return o.PipeE(yaml.SetAnnotation(runtimeutil.FunctionAnnotationKey, string(decl)))
	}
	entry := l.k.Transformers[at]
	if strings.Contains(entry, "\n") {
		o := l.b.FunctionConfig.Copy()
		_ = o.PipeE(yaml.ClearAnnotation(kioutil.PathAnnotation))
		if err := set(o); err != nil {
			return err
		}
		s, err := o.String()
		if err != nil {
			return err
		}
		k := l.k
		k.Transformers = append([]string(nil), k.Transformers...)
		k.Transformers[at] = s
		data, err := sigsyaml.Marshal(&k)
		if err != nil {
			return err
		}
		return l.c.mem.WriteFile(path.Join(l.top, l.name), data)
	}
	p := path.Join(l.top, filepath.ToSlash(entry))
	data, err := l.c.mem.ReadFile(p)
	if err != nil {
		return err
	}
	objs, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
	if err != nil || len(objs) != 1 {
		return fmt.Errorf("%s: transformers[%d]: the stowage functionConfig cannot be read again (%v)", l.b.File, at, err)
	}
	if err := set(objs[0]); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := (kio.ByteWriter{Writer: &buf}).Write(objs); err != nil {
		return err
	}
	return l.c.mem.WriteFile(p, buf.Bytes())
}
