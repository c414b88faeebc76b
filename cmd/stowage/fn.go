package main

import (
	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/fn/framework/command"

	"github.com/stowage/stowage/internal/fn"
)

// newFn is `stowage fn`: the KRM function, ResourceList on stdin and
// stdout, for kustomize's exec functions.
func newFn(getenv env) *cobra.Command {
	p := &fn.Processor{Getenv: getenv}
	c := command.Build(p, command.StandaloneDisabled, true)
	c.Flags().StringArrayVar(&p.AllowEnv, "allow-env", nil, "an environment variable env: password sources may read besides STOWAGE_* ones (repeatable; set it in the exec declaration's args)")
	c.Use = "fn"
	c.Short = "Run as a kustomize KRM function (ResourceList on stdin, ResourceList with results on stdout)"
	c.Long = `Run as a KRM function. Declare it in a kustomization's transformers or
generators with the annotation

  config.kubernetes.io/function: |
    exec:
      path: stowage      # looked up in $PATH; ./stowage is relative to the kustomization
      args: [fn]

and build with: kustomize build --enable-alpha-plugins --enable-exec
Without --enable-exec kustomize skips the function silently, and
'kubectl kustomize' always skips exec functions.

functionConfig kinds: stowage.dev/v1alpha1 Stowage (spec: the config, plus
spec.profile) and org.apache.submarine/v1 JupyterImagePuller. Digests come from
the ImageLock item (stowage.lock.yaml listed in resources). Every other workload
in the input gets its images pinned from the lock.

Password sources: env: may read only variables starting with STOWAGE_ and
those named by --allow-env (args: [fn, --allow-env, HARBOR_PASSWORD]); file:
only regular files inside the kustomization's directory.`
	return c
}
