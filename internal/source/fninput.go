package source

import (
	"bytes"
	"fmt"
	"io"

	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/kyaml/fn/runtime/runtimeutil"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/filters"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/kustomization"
)

// kustomizeIDAnnotation is the annotation kustomize's exec-function
// plugin (api/internal/plugins/fnplugin) writes on every resource it
// passes, the resource's id as YAML, to match the output to the input.
const kustomizeIDAnnotation = "kustomize.config.k8s.io/id"

// FunctionInputSize returns the size in bytes of the ResourceList kustomize
// writes to the function's stdin for b, with kustomize's and kyaml's own
// code for each step kustomize takes: every item as kustomize's Resource
// serializes it (AsYAML) with its id annotation, joined with "---", read
// by kio's ByteReader (index annotations) and wrapped by runtimeutil's
// FunctionFilter (id annotations, the ResourceList, the functionConfig with
// config.kubernetes.io/local-config: "true"). Annotations kustomize keeps
// only during a build (internal.config.kubernetes.io/previous*, for renamed
// objects) are not in b.Items and not counted, so the result may fall
// short of kustomize's by their size.
func FunctionInputSize(b *kustomization.Build) (int64, error) {
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	var in bytes.Buffer
	for i, it := range b.Items {
		n := it.Copy()
		for _, k := range []string{kioutil.PathAnnotation, kioutil.IndexAnnotation, kioutil.LegacyPathAnnotation, kioutil.LegacyIndexAnnotation} {
			if err := n.PipeE(yaml.ClearAnnotation(k)); err != nil {
				return 0, err
			}
		}
		m, err := n.Map()
		if err != nil {
			return 0, err
		}
		res, err := rf.FromMap(m)
		if err != nil {
			return 0, err
		}
		id, err := sigsyaml.Marshal(res.CurId())
		if err != nil {
			return 0, err
		}
		if err := res.PipeE(yaml.SetAnnotation(kustomizeIDAnnotation, string(id))); err != nil {
			return 0, err
		}
		out, err := res.AsYAML()
		if err != nil {
			return 0, err
		}
		if i > 0 {
			in.WriteString("---\n")
		}
		in.Write(out)
	}
	fc := b.FunctionConfig.Copy()
	if err := fc.PipeE(yaml.ClearAnnotation(kioutil.PathAnnotation)); err != nil {
		return 0, err
	}
	if err := fc.PipeE(yaml.SetAnnotation(filters.LocalConfigAnnotation, "true")); err != nil {
		return 0, err
	}
	var size int64
	count := &runtimeutil.FunctionFilter{FunctionConfig: fc, Run: func(r io.Reader, _ io.Writer) error {
		var err error
		size, err = io.Copy(io.Discard, r)
		return err
	}}
	p := kio.Pipeline{Inputs: []kio.Reader{&kio.ByteReader{Reader: &in}}, Filters: []kio.Filter{count}, Outputs: []kio.Writer{&kio.ByteWriter{Writer: io.Discard}}}
	if err := p.Execute(); err != nil {
		return 0, fmt.Errorf("the ResourceList kustomize would pass: %w", err)
	}
	return size, nil
}

// LockRepair is what the lock command tells w while it reads s's lock
// (LockInputs' repair): first, for a kustomization, a warning when the
// ResourceList kustomize would pass to the function is over the exec
// declaration's input bound (the lock is written, but kustomize build
// would fail, which vet reports as an error; nothing when the size cannot
// be computed), then, through the returned repair, each lock entry that
// does not validate and is dropped to be resolved again. Untrusted text
// is escaped.
func (s *Source) LockRepair(w io.Writer) func(dropped error) {
	if b := s.Kustomization; b != nil {
		if size, err := FunctionInputSize(b); err == nil && size > s.MaxInput {
			fmt.Fprintf(w, "stowage: warning: kustomization %s: the ResourceList kustomize would pass to the function holds %d bytes, more than the %d the function reads, so kustomize build would fail: %s, or split the kustomization\n",
				escape.Text(b.Dir), size, s.MaxInput, escape.Text(s.InputBound()))
		}
	}
	return func(d error) {
		fmt.Fprintf(w, "stowage: %s; the entry is dropped and resolved again\n", escape.Text(fmt.Sprint(d)))
	}
}
