package vet

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/workload"
)

// runFunction runs the KRM function in process on the items kustomize
// would hand it (src's build), with the exec declaration's --allow-env
// names, reading no password (fn.Processor.CheckOnly), and returns how
// many objects it adds and the DaemonSets it rendered, by profile. The
// function's warnings about the items (the functionConfig's are the
// loader's to print) go to o.Warnings as `stowage: file:line: warning: …`
// lines, and every string left reading as an image reference without a
// digest (workload.EachLeftover) is listed in rep.Unpinned. Errors: a
// ResourceList over the declaration's --max-input-bytes (kustomize build
// would fail), and the function's error results as a
// *source.FunctionError.
func runFunction(src *source.Source, o Options, rep *v1alpha1.VetReport) (int, map[string][]*appsv1.DaemonSet, error) {
	b := src.Kustomization
	size, err := o.InputSize(b)
	if err != nil {
		return 0, nil, err
	}
	if size > src.MaxInput {
		return 0, nil, fmt.Errorf("kustomization %s: the ResourceList kustomize would pass to the function holds %d bytes, more than the %d the function reads, so kustomize build would fail: %s, or split the kustomization",
			b.Dir, size, src.MaxInput, src.InputBound())
	}
	rl := &framework.ResourceList{FunctionConfig: b.FunctionConfig.Copy()}
	for _, it := range b.Items {
		rl.Items = append(rl.Items, it.Copy())
	}
	p := &fn.Processor{Dir: src.Dir, Getenv: o.Getenv, AllowEnv: src.AllowEnv, CheckOnly: true, ConfigOptions: o.Schema}
	if err := p.Process(rl); err != nil {
		return 0, nil, source.NewFunctionError(p, b, rl.Results)
	}
	var items framework.Results
	for _, r := range rl.Results {
		if r.ResourceRef == nil || !fn.IsFunctionConfig(b.FunctionConfig) || r.ResourceRef.Kind != b.FunctionConfig.GetKind() || r.ResourceRef.Name != b.FunctionConfig.GetName() {
			items = append(items, r)
		}
	}
	for _, l := range p.Locate(b.FunctionConfig, items) {
		if l.Severity == framework.Warning {
			fmt.Fprintf(o.Warnings, "stowage: %s\n", escape.Text(l.String()))
		}
	}
	workload.EachLeftover(rl.Items[:len(b.Items)], nil, func(item *kyaml.RNode, field, ref string) {
		rep.Unpinned = append(rep.Unpinned, v1alpha1.VetUnpinned{Object: item.GetKind() + " " + item.GetName(), Field: field, Reference: ref})
	})
	dss, err := renderedDaemonSets(rl.Items)
	if err != nil {
		return 0, nil, err
	}
	return len(rl.Items) - len(b.Items), dss, nil
}

// renderedDaemonSets returns the DaemonSets among items that a profile
// rendered (labelled render.LabelProfile), by profile.
func renderedDaemonSets(items []*kyaml.RNode) (map[string][]*appsv1.DaemonSet, error) {
	out := map[string][]*appsv1.DaemonSet{}
	for _, it := range items {
		prof := it.GetLabels()[render.LabelProfile]
		if it.GetKind() != "DaemonSet" || prof == "" {
			continue
		}
		text, err := it.String()
		if err != nil {
			return nil, err
		}
		ds := &appsv1.DaemonSet{}
		if err := sigsyaml.Unmarshal([]byte(text), ds); err != nil {
			return nil, fmt.Errorf("DaemonSet %s/%s the function rendered: %w", it.GetNamespace(), it.GetName(), err)
		}
		out[prof] = append(out[prof], ds)
	}
	return out, nil
}
