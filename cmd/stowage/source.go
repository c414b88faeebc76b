package main

import (
	"context"
	"io"

	"github.com/spf13/pflag"

	"github.com/stowage/stowage/fn"
	"github.com/stowage/stowage/internal/kustomization"
	"github.com/stowage/stowage/internal/source"
)

// kustomizationCommands are the commands whose DIR may also be a
// kustomization that declares stowage as a KRM function.
var kustomizationCommands = []string{"stowage vet", "stowage lock", "stowage bump", "stowage mirror", "stowage status"}

// kustomizationHelp ends the long help of kustomizationCommands.
const kustomizationHelp = `

DIR may also be a kustomization whose transformers: hold the stowage
functionConfig (a Stowage or JupyterImagePuller with the exec declaration
config.kubernetes.io/function): the functionConfig is then the config and
names the profile (the one the function renders; --profile is refused); the
lock is the stowage.lock.yaml its resources list (lock and bump write it
only inside the kustomization's own directory); the images the function
pins in the other resources count too. Passwords are read as the function
reads them: env: only STOWAGE_* variables and those the operator names in
STOWAGE_ALLOW_ENV, of which the exec declaration's --allow-env may only
keep some. The kustomization is built with kustomize's API up to the
stowage transformer, from files beneath --root only (default DIR; --root .
lets an overlay reach ../base). Refused, by file, line and field: any
generator, transformer or validator other than kustomize's builtins and the
stowage functionConfig (another KRM function, exec or container, or a
legacy plugin) in any kustomization the build reaches, helmCharts, remote
resources and bases, and a lock behind a link that leaves --root.`

// addRootFlag adds --root, the directory a kustomization's reads stay
// beneath.
func (o *loadOptions) addRootFlag(fs *pflag.FlagSet) {
	fs.StringVar(&o.root, "root", "", "when DIR is a kustomization: the directory its files (bases, components) may come from; default DIR")
}

// loadSource reads dir with the command's flags and the schema options of
// ctx's run (schemaOptions) through source.Load: a
// kustomization with a stowage transformer when dir holds a kustomization
// file, else a config directory. The warnings of a functionConfig are
// written to stderr as the function writes them; its errors are returned
// as a *source.FunctionError. The exec declaration's args are read with
// the fn command's own flags.
func loadSource(ctx context.Context, stderr io.Writer, dir string, o loadOptions) (*source.Source, error) {
	lo := source.LoadOptions{
		AllowLiteralPasswords: o.allowLiteralPasswords,
		Root:                  o.root,
		Schema:                schemaOptions(ctx),
		Warnings:              stderr,
		Declared:              declaredFn,
	}
	if getenv := configRunOf(ctx).getenv; getenv != nil {
		lo.Getenv = getenv
	}
	if o.deadline != nil {
		lo.Deadline = *o.deadline
	}
	if kustomization.Find(dir) != "" {
		// What the standard log carries now is kustomize's API's (a
		// kustomization is built), not Helm's.
		setLogLabel("kustomize")
	}
	return source.Load(ctx, dir, lo)
}

// declaredFn reads an exec declaration's args as this command line runs
// them (source.LoadOptions.Declared): ok when they run `stowage fn`, its
// flags parsed by the fn command (fn.DeclaredFlags).
func declaredFn(args []string) (source.Declaration, bool, error) {
	c, rest, err := newRoot(nil).Find(args)
	if err != nil || c.Name() != "fn" {
		return source.Declaration{}, false, nil
	}
	allowEnv, maxInput, err := fn.DeclaredFlags(c, rest)
	return source.Declaration{AllowEnv: allowEnv, MaxInput: maxInput}, true, err
}
