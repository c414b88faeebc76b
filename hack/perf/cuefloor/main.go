// Command cuefloor is the floor under any KRM function that validates its
// functionConfig with stowage's CUE schema in its own process: kyamlnoop
// (kyaml's fn/framework, the ResourceList written back unchanged) plus CUE
// alone doing that validation — a context, the embedded schema compiled,
// the functionConfig's spec (without spec.profile) extracted from YAML,
// unified with #Config and validated as concrete. None of stowage's own
// code runs: its CPU over kyamlnoop's is CUE's share, which `stowage fn`
// cannot go below while it keeps the schema (hack/perf's krm).
package main

import (
	"errors"
	"fmt"
	"os"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueyaml "cuelang.org/go/encoding/yaml"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/stowage/stowage/schema"
)

func main() {
	validate := framework.ResourceListProcessorFunc(func(rl *framework.ResourceList) error {
		if rl.FunctionConfig == nil || rl.FunctionConfig.Field("spec") == nil {
			return errors.New("no functionConfig with a spec")
		}
		spec := rl.FunctionConfig.Field("spec").Value.Copy()
		if err := spec.SetMapField(nil, "profile"); err != nil {
			return err
		}
		data, err := spec.String()
		if err != nil {
			return err
		}
		ctx := cuecontext.New()
		s := ctx.CompileBytes(schema.Source, cue.Filename(schema.SchemaFile))
		f, err := cueyaml.Extract("functionConfig", []byte(data))
		if err != nil {
			return err
		}
		v := s.LookupPath(cue.ParsePath("#Config")).Unify(ctx.BuildFile(f))
		return v.Validate(cue.Concrete(true))
	})
	if err := framework.Execute(validate, nil); err != nil {
		fmt.Fprintln(os.Stderr, "cuefloor:", err)
		os.Exit(1)
	}
}
