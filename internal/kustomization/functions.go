package kustomization

import (
	"bytes"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/fn/runtime/runtimeutil"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	yamlv3 "go.yaml.in/yaml/v3"
)

// builtinAPIVersion is the apiVersion of kustomize's builtin generators
// and transformers (api/builtins), the only plugins stowage lets a build
// run besides its own function.
const builtinAPIVersion = "builtin"

// helmKind is the builtin that runs helm (and fetches charts).
const helmKind = "HelmChartInflationGenerator"

// fileFields are the fields of builtin generator and transformer configs
// whose values kustomize's loader reads as files, and therefore fetches
// when they are http(s) URLs (PatchTransformer path,
// PatchStrategicMergeTransformer paths, ReplacementTransformer
// replacements[].path, ConfigMapGenerator and SecretGenerator files, envs
// and env).
var fileFields = map[string]bool{"path": true, "paths": true, "files": true, "envs": true, "env": true}

// checkFunctions applies the one rule of what a build may run to the
// kustomization file (in the copy) with content data and parsed k: every
// object of its generators, transformers and validators is one of
// kustomize's builtins other than HelmChartInflationGenerator, loading no
// URL, except the stowage functionConfig (isFunction) among the
// transformers of the kustomization built (top); an entry naming a
// directory is refused (its objects are the output of another build, which
// stowage would have to run to check). Legacy plugins (any other
// apiVersion and kind) and KRM functions (exec, container or starlark)
// are refused. Each error
// names the kustomization file, the entry's line and field, and for an
// object in a file that file and line.
func (c *copied) checkFunctions(file, dir string, data []byte, k *types.Kustomization, top bool, isFunction func(*yaml.RNode) bool) []error {
	var errs []error
	lines := entryLines(data)
	for _, f := range []struct {
		name string
		list []string
	}{{"generators", k.Generators}, {"transformers", k.Transformers}, {"validators", k.Validators}} {
		for i, e := range f.list {
			at := fmt.Sprintf("%s:%d: %s[%d]", file, lines.at(f.name, i), f.name, i)
			if remoteForm(e) && !strings.Contains(e, "\n") {
				continue // checkReachable refuses it
			}
			objs, objFile, err := c.entryObjects(dir, e)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", at, c.explain(err)))
				continue
			}
			if objs == nil && objFile == "" && !strings.Contains(e, "\n") {
				if c.mem.IsDir(path.Join(dir, filepath.ToSlash(e))) {
					errs = append(errs, fmt.Errorf("%s %q is a directory: stowage reads generator, transformer and validator configs from files (or inline YAML) only, since a directory's objects are the output of a build it would have to run to check; list its files instead", at, e))
				}
				continue
			}
			for _, o := range objs {
				where := at
				if objFile != "" {
					line := o.YNode().Line
					if a, err := o.Pipe(yaml.Lookup("metadata", "annotations", runtimeutil.FunctionAnnotationKey)); err == nil && a != nil {
						line = a.YNode().Line
					}
					where = fmt.Sprintf("%s (%s:%d)", at, objFile, line)
				}
				if o.GetApiVersion() == builtinAPIVersion {
					if o.GetKind() == helmKind {
						errs = append(errs, fmt.Errorf("%s: %s %s runs helm, which stowage does not run; render the chart into a file and list it in resources", where, o.GetKind(), o.GetName()))
					}
					if u := urlField(o.YNode()); u != "" {
						errs = append(errs, fmt.Errorf("%s: %s %s: %s is a URL: stowage reads no remote file", where, o.GetKind(), o.GetName(), u))
					}
					continue
				}
				if isFunction(o) && top && f.name == "transformers" {
					continue // stowage's own; findFunction takes it
				}
				errs = append(errs, fmt.Errorf("%s: %s %s %s, which stowage does not run: a build stowage makes (lock, vet, cmp generate) runs kustomize's builtins and stowage's own function only", where, o.GetKind(), o.GetName(), describe(o, isFunction, top)))
			}
		}
	}
	return errs
}

// describe says what o is, for the refusal of checkFunctions.
func describe(o *yaml.RNode, isFunction func(*yaml.RNode) bool, top bool) string {
	if isFunction(o) {
		if top {
			return "is a stowage functionConfig outside transformers"
		}
		return "is a stowage functionConfig in a kustomization the build reaches (declare stowage's transformer once, in the kustomization built)"
	}
	spec, err := runtimeutil.GetFunctionSpec(o)
	switch {
	case err != nil:
		return fmt.Sprintf("declares a KRM function that does not parse (%v)", err)
	case spec == nil:
		return "is a legacy kustomize plugin"
	case spec.Exec.Path != "":
		return fmt.Sprintf("is a KRM function running the program %q", spec.Exec.Path)
	case spec.Container.Image != "":
		return fmt.Sprintf("is a KRM function running the container image %q", spec.Container.Image)
	}
	return "is a KRM function"
}

// urlField returns the first value of a fileFields field anywhere in n
// that is an http(s) URL ("field: value"), "" when there is none.
func urlField(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if fileFields[k.Value] {
				for _, s := range scalars(v) {
					_, after, ok := strings.Cut(s, "=") // a file source may be key=path
					if isURL(s) || ok && isURL(after) {
						return fmt.Sprintf("%s: %q", k.Value, s)
					}
				}
			}
			if u := urlField(v); u != "" {
				return u
			}
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, ch := range n.Content {
			if u := urlField(ch); u != "" {
				return u
			}
		}
	}
	return ""
}

// scalars are the scalar values of n: n itself, or a sequence's items.
func scalars(n *yaml.Node) []string {
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}
	case yaml.SequenceNode:
		var out []string
		for _, ch := range n.Content {
			if ch.Kind == yaml.ScalarNode {
				out = append(out, ch.Value)
			}
		}
		return out
	}
	return nil
}

// entryObjects returns the objects of one generators, transformers or
// validators entry of the kustomization in dir (in the copy): inline YAML,
// or the file it names (returned as file, joined to dir). A directory, or
// an entry absent from the copy (checkReachable refuses that), gives no
// objects and file "".
func (c *copied) entryObjects(dir, entry string) ([]*yaml.RNode, string, error) {
	if strings.Contains(entry, "\n") {
		objs, err := (&kio.ByteReader{Reader: strings.NewReader(entry), OmitReaderAnnotations: true}).Read()
		if err != nil {
			return nil, "", fmt.Errorf("inline YAML: %w", err)
		}
		return objs, "", nil
	}
	p := path.Join(dir, filepath.ToSlash(entry))
	if !c.mem.Exists(p) || c.mem.IsDir(p) {
		return nil, "", nil
	}
	data, err := c.mem.ReadFile(p)
	if err != nil {
		return nil, "", err
	}
	objs, err := (&kio.ByteReader{Reader: bytes.NewReader(data), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", p, err)
	}
	return objs, p, nil
}

// lineIndex maps a top-level field of a kustomization file, and an item of
// a sequence field, to its line.
type lineIndex map[string][]int

// entryLines indexes the top-level fields of a kustomization file's YAML:
// for each, the key's line then its items' lines. A file that does not
// parse gives an empty index.
func entryLines(data []byte) lineIndex {
	idx := lineIndex{}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yamlv3.MappingNode {
		return idx
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		lines := []int{k.Line}
		if v.Kind == yamlv3.SequenceNode {
			for _, it := range v.Content {
				lines = append(lines, it.Line)
			}
		}
		idx[k.Value] = lines
	}
	return idx
}

// at is the line of item i of field (-1: the key itself); 0 when unknown.
func (x lineIndex) at(field string, i int) int {
	l := x[field]
	if i+1 < len(l) && i+1 >= 0 {
		return l[i+1]
	}
	if len(l) > 0 {
		return l[0]
	}
	return 0
}
