package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/schema"
)

func newVet() *cobra.Command {
	var o loadOptions
	c := &cobra.Command{
		Use:   "vet [DIR]",
		Short: "Check the config in DIR (default .) and that the lock covers every image of every profile",
		Long: `Load and validate the config, then render every profile (or --profile) against
the lock without writing anything. Passwords are not read: vet needs no secrets.`,
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
			n := 0
			for _, p := range profiles {
				objs, err := renderConfig(cfg, dir, p, nil, false)
				if err != nil {
					return fmt.Errorf("profile %q: %w", p, err)
				}
				n += len(objs)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok: %d profile(s), %d object(s)\n", len(profiles), n)
			return nil
		},
	}
	c.Flags().StringVarP(&o.profile, "profile", "p", "", "vet only this profile")
	c.Flags().BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	return c
}
