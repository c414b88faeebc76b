package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/internal/argocd"
	"github.com/stowage/stowage/internal/kustomization"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/source"
)

func newCMP(getenv env) *cobra.Command {
	c := &cobra.Command{
		Use:   "cmp",
		Short: "The commands of stowage's Argo CD Config Management Plugin (examples/gitops-argo/plugin.yaml)",
		Long: `The commands an Argo CD Config Management Plugin sidecar runs, in the
application's directory (argocd-cmp-server runs them there, with the
Application's plugin env as ARGOCD_ENV_* variables).

  stowage cmp discover [DIR]   prints one line when DIR is stowage's, nothing otherwise
  stowage cmp generate [DIR]   prints the manifests on stdout, nothing else

See examples/gitops-argo/README.md.`,
	}
	c.AddCommand(newCMPDiscover(), newCMPGenerate(getenv))
	return c
}

func newCMPDiscover() *cobra.Command {
	return &cobra.Command{
		Use:   "discover [DIR]",
		Short: "Print one line when DIR (default .) is a kustomization with stowage's transformer or a stowage config directory",
		Long: `Print one line saying why DIR (default .) is stowage's, and nothing when it is
not: argocd-cmp-server takes any output of a plugin's discover.find.command
as a match. DIR is stowage's when it holds a kustomization file whose
transformers list a stowage functionConfig (kind Stowage or
JupyterImagePuller), or, without a kustomization file, a stowage.lock.yaml
or a .cue file. Exit 0 either way; 1 only when DIR cannot be read.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			why, err := source.Discover(dirArg(args))
			if err != nil {
				return err
			}
			if why != "" {
				fmt.Fprintln(cmd.OutOrStdout(), why)
			}
			return nil
		},
	}
}

func newCMPGenerate(getenv env) *cobra.Command {
	var (
		o        loadOptions
		deadline time.Duration
	)
	c := &cobra.Command{
		Use:   "generate [DIR]",
		Short: "Print the manifests of DIR (default .) on stdout: a config directory's profile, or a kustomization built with stowage's transformer",
		Long: `Print the manifests of DIR (default .) on stdout as one YAML stream, and
nothing else: Argo CD parses a plugin's whole stdout as manifests. Never
contacts a registry: digests come from the committed lock.

A config directory renders as 'stowage render DIR' does; the profile is
--profile, else $ARGOCD_ENV_PROFILE (an Application's plugin env PROFILE),
else the only one.

A kustomization is built with kustomize's own library, linked into
stowage, from an in-memory copy of the files beneath --root (default: the
repository checkout, DIR without $ARGOCD_APP_SOURCE_PATH; else DIR), under
the bounds 'stowage vet' applies (files, bytes, YAML aliases, --deadline).
It runs exactly one program: this stowage executable, as 'stowage fn', for
the transformer whose functionConfig (a Stowage or JupyterImagePuller)
declares exec: {path: stowage, args: [fn, …]} (or an absolute path to
this same executable); the functionConfig's spec.profile picks the
profile. Refused, with the file, line and field, before anything runs:
any other KRM function (exec, container or starlark) or legacy plugin in
the generators, transformers or validators of any kustomization the build
reaches, HelmChartInflationGenerator and helmCharts, remote resources,
bases and components (git, github.com, http and https), files behind
links that leave --root, and an exec declaration with envs. 'stowage vet
DIR' refuses the same.

On any error stdout stays empty, the error (file, line and field) goes to
stderr and the exit code is 1.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := dirArg(args)
			if err := source.CheckConfigDir(dir, true); err != nil {
				return err
			}
			if deadline <= 0 {
				return usageError{fmt.Errorf("--deadline must be positive")}
			}
			ctx, cancel := context.WithTimeoutCause(cmd.Context(), deadline, fmt.Errorf("it ran past --deadline %v", deadline))
			defer cancel()
			var out []byte
			var err error
			if kustomization.Find(dir) != "" {
				if o.profile != "" {
					return usageError{fmt.Errorf("--profile is for a config directory; in a kustomization the functionConfig's spec.profile decides")}
				}
				root := o.root
				if root == "" {
					sp, _ := getenv(argocd.SourcePathEnv)
					root = argocd.CheckoutRoot(dir, sp)
				}
				out, err = kustomizeBuild(ctx, dir, root)
			} else {
				if o.root != "" {
					return usageError{fmt.Errorf("--root is for a kustomization; %s holds none", dir)}
				}
				if o.profile == "" {
					o.profile, _ = getenv(argocd.ProfileEnv)
				}
				var objs []render.Object
				objs, err = renderDir(ctx, dir, o, getenv)
				if err == nil {
					out, err = render.Encode(objs)
				}
			}
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	c.Flags().StringVarP(&o.profile, "profile", "p", "", "config directory: the profile to render (default $"+argocd.ProfileEnv+", else the only one)")
	c.Flags().BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "config directory: accept auth.password values that are not env: or file: sources")
	c.Flags().StringVar(&o.root, "root", "", "kustomization: the directory its files (bases, components) may come from; default the checkout (DIR without $"+argocd.SourcePathEnv+"), else DIR")
	c.Flags().DurationVar(&deadline, "deadline", registry.DefaultRunTimeout, "time limit of the whole run")
	return c
}

// kustomizeBuild builds the kustomization in dir from the files beneath
// root with kustomization.Generate, running this executable as stowage's
// function, and stops when ctx ends.
func kustomizeBuild(ctx context.Context, dir, root string) ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the stowage executable: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return nil, fmt.Errorf("the stowage executable: %w", err)
	}
	return kustomization.Generate(ctx, dir, root, fn.IsFunctionConfig, exe)
}
