package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/fluxartifact"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/source"
)

type pushOptions struct {
	load     loadOptions
	reg      registryOptions
	source   string
	revision string
	created  string
	format   string
	// includeSecrets packs the rendered Secrets too (default: left out).
	includeSecrets bool
}

func newPush(getenv env) *cobra.Command {
	var o pushOptions
	c := &cobra.Command{
		Use:   "push [DIR] oci://REGISTRY/REPOSITORY:TAG",
		Short: "Render a profile of DIR (default .) and push it as the OCI artifact a Flux OCIRepository pulls",
		Long: `Render a profile exactly as 'stowage render DIR --output-dir OUT' does (the same files:
one per object and a kustomization.yaml), and push them as an OCI artifact
in the layout of 'flux push artifact': an OCI image manifest whose config
has the media type application/vnd.cncf.flux.config.v1+json and whose one
layer, application/vnd.cncf.flux.content.v1.tar+gzip, is the tar of the
files; annotations org.opencontainers.image.created, .source (--source)
and .revision (--revision). A Flux OCIRepository with this url and a
Kustomization with path ./ apply it.

The artifact is reproducible: the tar is sorted with fixed modes, owners
and times, and created is --created (RFC 3339), else $SOURCE_DATE_EPOCH
(seconds), else the Unix epoch; so the same config, lock and metadata give
the same digest everywhere, also at an offline site pushing to its own
registry from the same commit. Rendering reads no registry; only the push
does, with credentials from the docker config (the keychain).

Prints the pushed reference with its digest on stdout:
REGISTRY/REPOSITORY:TAG@sha256:….

Secrets are left out of the artifact: anyone who may pull it could read
them, and the pull Secrets hold registry passwords. push names each Secret
it left out on stderr; give them to the cluster another way: SOPS-encrypted
in Git (a Flux Kustomization with spec.decryption), or from an external
secret store (External Secrets Operator, a sealed secret). --include-secrets
packs them anyway, for a registry only the cluster can read.

The destination's registry and repository must be canonical (no '..', '.',
upper case) and carry no user:password@ (give credentials in the docker
config); --source and --revision must be printable text, and --source no
URL with credentials. These are refused with exit 1, the credentials never
printed.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := printer.Check("-o", o.format); err != nil {
				return usageError{err}
			}
			dir, url := ".", args[len(args)-1]
			if len(args) == 2 {
				dir = args[0]
			}
			ref, err := fluxartifact.ParseDestination(url)
			if de := (*fluxartifact.DestinationError)(nil); errors.As(err, &de) {
				return usageError{err}
			} else if err != nil {
				return err
			}
			meta := fluxartifact.Metadata{Source: o.source, Revision: o.revision}
			if err := meta.Validate(); err != nil {
				return fmt.Errorf("--source/--revision: %w", err)
			}
			if meta.Created, err = fluxartifact.Created(o.created, getenv); err != nil {
				return usageError{err}
			}
			if err := source.CheckConfigDir(dir, false); err != nil {
				return err
			}
			objs, err := renderDir(cmd.Context(), dir, o.load, getenv)
			if err != nil {
				return err
			}
			img, leftOut, err := fluxartifact.Build(objs, meta, o.includeSecrets)
			if err != nil {
				return err
			}
			digest, err := img.Digest()
			if err != nil {
				return err
			}
			o.reg.stdin = cmd.InOrStdin()
			r, done, err := o.reg.resolver(io.Discard, creds.Rule{}, nil, getenv)
			if err != nil {
				return err
			}
			defer done()
			ctx, cancel := context.WithTimeout(cmd.Context(), o.reg.runTimeout)
			defer cancel()
			if err := r.Push(ctx, ref, img); err != nil {
				return err
			}
			rep := v1alpha1.PushReport{Reference: ref.Name(), Digest: digest.String()}
			for _, sec := range leftOut {
				rep.SecretsLeftOut = append(rep.SecretsLeftOut, sec.Namespace+"/"+sec.Name)
				fmt.Fprintf(cmd.ErrOrStderr(), "stowage: push: left Secret %s/%s out of the artifact (anyone who may pull it could read it); give it to the cluster SOPS-encrypted in Git or from an external secret store, or pack it with --include-secrets\n", escape.Line(sec.Namespace), escape.Line(sec.Name))
			}
			return printer.Print(cmd.OutOrStdout(), o.format, rep)
		},
	}
	fs := c.Flags()
	fs.StringVarP(&o.load.profile, "profile", "p", "", "profile to render (optional when the config has one)")
	fs.BoolVar(&o.load.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	fs.StringVar(&o.source, "source", "", "the org.opencontainers.image.source annotation: the Git URL of the config (Flux shows it)")
	fs.StringVar(&o.revision, "revision", "", "the org.opencontainers.image.revision annotation, as Flux writes it: BRANCH@sha1:COMMIT")
	fs.StringVar(&o.created, "created", "", "the org.opencontainers.image.created annotation, RFC 3339 (default $SOURCE_DATE_EPOCH, else the Unix epoch)")
	fs.StringVarP(&o.format, "output", "o", "text", "text (REFERENCE@DIGEST), json or yaml: "+printer.MustKeys(v1alpha1.PushReport{}))
	fs.BoolVar(&o.includeSecrets, "include-secrets", false, "pack the rendered Secrets (registry passwords) into the artifact too; anyone who may pull it can read them")
	o.reg.addFlagsWith(fs, pushDefaults)
	return c
}
