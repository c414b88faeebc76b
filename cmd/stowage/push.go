package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/creds"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/fluxartifact"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/source"
)

// ociURLPrefix starts push's destination, as in a Flux OCIRepository's url.
const ociURLPrefix = "oci://"

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
			if err := checkFormat("-o", o.format, "text", "json"); err != nil {
				return err
			}
			dir, url := ".", args[len(args)-1]
			if len(args) == 2 {
				dir = args[0]
			}
			if err := refuseDestination(url); err != nil {
				return err
			}
			ref, err := pushReference(url)
			if err != nil {
				return usageError{err}
			}
			meta := fluxartifact.Metadata{Source: o.source, Revision: o.revision}
			if err := meta.Validate(); err != nil {
				return fmt.Errorf("--source/--revision: %w", err)
			}
			created, err := pushCreated(o.created, getenv)
			if err != nil {
				return usageError{err}
			}
			if err := source.CheckConfigDir(dir, false); err != nil {
				return err
			}
			objs, err := renderDir(cmd.Context(), dir, o.load, getenv)
			if err != nil {
				return err
			}
			var leftOut []render.Object
			if !o.includeSecrets {
				objs, leftOut = fluxartifact.LeaveOutSecrets(objs)
			}
			files, err := render.Files(objs)
			if err != nil {
				return err
			}
			meta.Created = created
			img, err := fluxartifact.Image(files, meta)
			if err != nil {
				return err
			}
			digest, err := img.Digest()
			if err != nil {
				return err
			}
			r, done, err := o.reg.resolver(io.Discard, creds.Rule{}, nil, getenv)
			if err != nil {
				return err
			}
			defer done()
			repo, pusher, _, err := r.Destination(ref.Context())
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.reg.runTimeout)
			defer cancel()
			if err := pusher.Push(ctx, repo.Tag(ref.TagStr()), img); err != nil {
				return fmt.Errorf("push %s: %s", ref, r.Scrub(err.Error()))
			}
			var names []string
			for _, sec := range leftOut {
				names = append(names, sec.Namespace+"/"+sec.Name)
				fmt.Fprintf(cmd.ErrOrStderr(), "stowage: push: left Secret %s/%s out of the artifact (anyone who may pull it could read it); give it to the cluster SOPS-encrypted in Git or from an external secret store, or pack it with --include-secrets\n", escape.Line(sec.Namespace), escape.Line(sec.Name))
			}
			if o.format == "json" {
				return writeReport(cmd.OutOrStdout(), pushReport{Reference: ref.Name(), Digest: digest.String(), SecretsLeftOut: names})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", ref.Name(), digest)
			return nil
		},
	}
	fs := c.Flags()
	fs.StringVarP(&o.load.profile, "profile", "p", "", "profile to render (optional when the config has one)")
	fs.BoolVar(&o.load.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	fs.StringVar(&o.source, "source", "", "the org.opencontainers.image.source annotation: the Git URL of the config (Flux shows it)")
	fs.StringVar(&o.revision, "revision", "", "the org.opencontainers.image.revision annotation, as Flux writes it: BRANCH@sha1:COMMIT")
	fs.StringVar(&o.created, "created", "", "the org.opencontainers.image.created annotation, RFC 3339 (default $SOURCE_DATE_EPOCH, else the Unix epoch)")
	fs.StringVarP(&o.format, "output", "o", "text", "text (REFERENCE@DIGEST), or json: {reference, digest, secretsLeftOut}")
	fs.BoolVar(&o.includeSecrets, "include-secrets", false, "pack the rendered Secrets (registry passwords) into the artifact too; anyone who may pull it can read them")
	o.reg.addFlagsWith(fs, pushDefaults)
	return c
}

// pushReport is push -o json: the tag pushed and the artifact's digest.
type pushReport struct {
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	// SecretsLeftOut are the Secrets (namespace/name) left out of the
	// artifact, without --include-secrets.
	SecretsLeftOut []string `json:"secretsLeftOut,omitempty"`
}

// refuseDestination refuses, with exit 1 and without echoing them,
// credentials in push's destination (oci://user:password@host/…), and a
// repository path the distribution grammar refuses ("..", ".", upper
// case, an empty component), which pkg/name partly accepts.
func refuseDestination(url string) error {
	rest := strings.TrimPrefix(url, ociURLPrefix)
	authority, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		return fmt.Errorf("destination %s***@%s: credentials in the URL are refused (they would be printed and stored); give them in the docker config", ociURLPrefix, escape.Line(rest[at+1:]))
	}
	if !strings.HasPrefix(url, ociURLPrefix) {
		return nil // pushReference says what to write
	}
	repo, _, _ := strings.Cut(rest, "@")
	if _, err := imageref.Parse(repo); err != nil {
		return fmt.Errorf("destination %q: %w", url, err)
	}
	return nil
}

// pushReference parses push's destination: oci:// then a reference with
// an explicit registry host (Flux's OCIRepository has no default
// registry) and a tag, and no digest (the digest is the artifact's).
func pushReference(url string) (name.Tag, error) {
	rest, ok := strings.CutPrefix(url, ociURLPrefix)
	if !ok {
		return name.Tag{}, fmt.Errorf("destination %q: want oci://REGISTRY/REPOSITORY:TAG", url)
	}
	if strings.Contains(rest, "@") {
		return name.Tag{}, fmt.Errorf("destination %q: give a tag, not a digest (the digest is the artifact's)", url)
	}
	t, err := name.NewTag(rest, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("destination %q: %v (want oci://REGISTRY/REPOSITORY:TAG)", url, err)
	}
	return t, nil
}

// pushCreated is the created time: flag (RFC 3339), else
// SOURCE_DATE_EPOCH (the reproducible-builds convention: seconds since
// the epoch), else the Unix epoch.
func pushCreated(flag string, getenv env) (time.Time, error) {
	if flag != "" {
		t, err := time.Parse(time.RFC3339, flag)
		if err != nil {
			return time.Time{}, fmt.Errorf("--created %q: want RFC 3339, e.g. 2026-01-02T15:04:05Z", flag)
		}
		return t.UTC(), nil
	}
	if s, ok := getenv("SOURCE_DATE_EPOCH"); ok && s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since the Unix epoch", s)
		}
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Unix(0, 0).UTC(), nil
}
