package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/pipeline"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/schema"
)

func newVet(getenv env) *cobra.Command {
	var (
		o      loadOptions
		ro     registryOptions
		remote bool
	)
	c := &cobra.Command{
		Use:   "vet [DIR]",
		Short: "Check the config in DIR (default .) and that the lock covers every image of every profile",
		Long: `Load and validate the config, then render every profile (or --profile) against
the lock without writing anything. Passwords are not read: vet needs no secrets,
but it refuses what render would: an env: variable unset or empty, a file:
source outside DIR, missing, not a regular file or empty (stat, not read).

With --remote, also check with one HEAD each that every digest the rendered
manifests pin still exists in its registry, and name each one that does not.
Passwords of the config's credentials are read then.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := dirArg(args)
			cfg, err := schema.Load(dir, schema.Options{AllowLiteralPasswords: o.allowLiteralPasswords})
			if err != nil {
				return err
			}
			profiles := cfg.ProfileNames()
			if o.profile != "" {
				profiles = []string{o.profile}
			}
			var (
				r    *registry.Resolver
				done func()
			)
			if remote {
				// Registry flags are checked before anything is rendered.
				all, err := plan.All(cfg, nil)
				if err != nil {
					return err
				}
				if r, done, err = ro.resolver(cmd.ErrOrStderr(), dir, all.Images, getenv); err != nil {
					return err
				}
			}
			l, err := readLock(dir)
			if err != nil {
				return err
			}
			n := 0
			var external []string
			for _, p := range profiles {
				objs, err := pipeline.Render(cfg, p, l, pipeline.Options{Dir: dir, NoPasswords: true, CheckPasswords: true, Getenv: getenv})
				if err != nil {
					return fmt.Errorf("profile %q: %w", p, err)
				}
				n += len(objs)
				if external, err = externalSecrets(cfg, p, l, external); err != nil {
					return err
				}
			}
			if !remote {
				fmt.Fprintf(cmd.OutOrStdout(), "ok: %d profile(s), %d object(s)\n", len(profiles), n)
				printExternalSecrets(cmd.OutOrStdout(), external)
				return nil
			}
			// The digests the rendered manifests pin: the plan's pins of
			// the profile vetted, or of every profile.
			var p *plan.Plan
			if o.profile != "" {
				p, err = plan.Build(cfg, o.profile, l)
			} else {
				p, err = plan.All(cfg, l)
			}
			if err != nil {
				return err
			}
			var pins []registry.Pin
			for _, img := range p.Images {
				for _, d := range img.Pins() {
					pins = append(pins, registry.Pin{Image: img, Digest: d})
				}
			}
			err = r.Verify(cmd.Context(), pins)
			done()
			if err != nil {
				return fmt.Errorf("pinned digests missing or unchecked: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %d profile(s), %d object(s), %d pinned digest(s) exist\n", len(profiles), n, len(pins))
			printExternalSecrets(cmd.OutOrStdout(), external)
			return nil
		},
	}
	c.Flags().BoolVar(&remote, "remote", false, "also check that every pinned digest still exists in its registry")
	ro.addFlags(c.Flags())
	c.Flags().StringVarP(&o.profile, "profile", "p", "", "vet only this profile")
	c.Flags().BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	return c
}

// externalSecrets appends to lines, for profile, each pull Secret the
// DaemonSets name but stowage does not render (render.ExternalSecrets),
// as "profile P: Secret NAME (REGISTRY, USED BY) in NS, NS".
func externalSecrets(cfg *schema.Config, profile string, l *lock.Lock, lines []string) ([]string, error) {
	p, err := plan.Build(cfg, profile, l)
	if err != nil {
		return nil, err
	}
	for _, e := range render.ExternalSecrets(p) {
		lines = append(lines, fmt.Sprintf("profile %s: Secret %s (%s; %s) in %s", p.Profiles[0], e.Name, e.Registry,
			strings.Join(e.UsedBy, ", "), strings.Join(e.Namespaces, ", ")))
	}
	return lines, nil
}

// printExternalSecrets says which Secrets the user must create, after
// vet's verdict.
func printExternalSecrets(w io.Writer, lines []string) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "stowage names these pull Secrets but does not render them; create each, a kubernetes.io/dockerconfigjson Secret with the registry's credentials, in every namespace listed (tenants' pods must present the same credentials to the kubelet):")
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
}
