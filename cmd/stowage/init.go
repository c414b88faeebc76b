package main

import (
	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/initconfig"
	"github.com/stowage/stowage/internal/printer"
)

func newInit() *cobra.Command {
	var image, namespace, profile, format string
	c := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a commented starter config and an empty lock into DIR (default .)",
		Long: `Write a starter config into DIR (default .; created if missing): config.cue
with one environment (--image), one profile (--profile) with one puller in
--namespace, and comments naming what to add next (credentials, GPU
placement, a site registry); and stowage.lock.yaml, an ImageLock with no
entries, for ` + "`stowage lock`" + ` to fill. After lock, vet and render pass.

init never overwrites: it refuses a DIR that holds a config file (.cue,
.yaml, .yml, .json) or a stowage.lock.yaml already.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := printer.Check("-o", format); err != nil {
				return usageError{err}
			}
			dir := dirArg(args)
			if err := refuseStdout("DIR", dir, "init writes a directory; give its path"); err != nil {
				return err
			}
			cfg, err := initconfig.Config(initconfig.Options{Image: image, Namespace: namespace, Profile: profile})
			if err != nil {
				return usageError{err}
			}
			files, err := initconfig.Write(cmd.Context(), dir, cfg)
			if err != nil {
				return err
			}
			return printer.Print(cmd.OutOrStdout(), format, v1alpha1.InitReport{Dir: dir, Files: files})
		},
	}
	c.Flags().StringVar(&image, "image", "apache/submarine:jupyter-notebook-0.7.0", "the environment's image reference")
	c.Flags().StringVar(&namespace, "namespace", "default", "the namespace of the puller's DaemonSet (it must exist in the cluster)")
	c.Flags().StringVarP(&profile, "profile", "p", "default", "the profile's name")
	c.Flags().StringVarP(&format, "output", "o", "text", "text, json or yaml: "+printer.MustKeys(v1alpha1.InitReport{}))
	return c
}
