package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/bump"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/registry"
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
the lock without writing anything. Passwords are not read: vet needs no secrets.

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
				images []bump.Image
				r      *registry.Resolver
				done   func()
			)
			if remote {
				// Registry flags are checked before anything is rendered.
				if images, err = bump.Images(cfg); err != nil {
					return err
				}
				if r, done, err = ro.resolver(cmd.ErrOrStderr(), dir, images, getenv); err != nil {
					return err
				}
			}
			n := 0
			for _, p := range profiles {
				objs, err := renderConfig(cfg, dir, p, nil, false)
				if err != nil {
					return fmt.Errorf("profile %q: %w", p, err)
				}
				n += len(objs)
			}
			if !remote {
				fmt.Fprintf(cmd.OutOrStdout(), "ok: %d profile(s), %d object(s)\n", len(profiles), n)
				return nil
			}
			l, err := readLock(dir)
			if err != nil {
				return err
			}
			pins, err := pinnedDigests(images, l, profiles)
			if err != nil {
				return err
			}
			err = r.Verify(cmd.Context(), pins)
			done()
			if err != nil {
				return fmt.Errorf("pinned digests missing or unchecked: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %d profile(s), %d object(s), %d pinned digest(s) exist\n", len(profiles), n, len(pins))
			return nil
		},
	}
	c.Flags().BoolVar(&remote, "remote", false, "also check that every pinned digest still exists in its registry")
	ro.addFlags(c.Flags())
	c.Flags().StringVarP(&o.profile, "profile", "p", "", "vet only this profile")
	c.Flags().BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	return c
}

// pinnedDigests lists the digests the rendered manifests of profiles pin:
// a digest written in the config; else, per use, the child of a single
// requested platform or the entry's digest. Each (image, digest) once.
func pinnedDigests(images []bump.Image, l *lock.Lock, profiles []string) ([]registry.Pin, error) {
	regImages := registryImages(images)
	var pins []registry.Pin
	for i, img := range images {
		var digests []string
		for _, u := range img.Uses {
			if !slices.Contains(profiles, u.Profile) {
				continue
			}
			d := img.Ref.Digest
			if d == "" {
				e, ok := l.Lookup(img.Ref.Key())
				if !ok {
					return nil, fmt.Errorf("image %s: %w", img.Ref.Key(), lock.ErrMissing)
				}
				d = e.Digest
				if len(u.Platforms) == 1 {
					var err error
					if d, err = e.DigestFor(u.Platforms[0]); err != nil {
						return nil, err
					}
				}
			}
			if !slices.Contains(digests, d) {
				digests = append(digests, d)
			}
		}
		slices.Sort(digests)
		for _, d := range digests {
			pins = append(pins, registry.Pin{Image: regImages[i], Digest: d})
		}
	}
	return pins, nil
}
