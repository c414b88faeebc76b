package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/internal/render"
)

func newRender(getenv env) *cobra.Command {
	var o loadOptions
	var out string
	var check bool
	c := &cobra.Command{
		Use:   "render [DIR]",
		Short: "Render a profile of the config in DIR (default .) with digests from DIR/stowage.lock.yaml",
		Long: `Render a profile: DaemonSets that pre-pull every image pinned to its digest,
pull Secrets, records ConfigMaps, the OpenPAI service ConfigMap and the package
cache ConfigMap. Never contacts a registry: digests come from the lock.

Without -o, writes one multi-document YAML stream to stdout. With -o DIR, writes
one file per object plus a kustomization.yaml, replacing DIR atomically. With
--check (needs -o), writes nothing and exits 1 listing the files that differ.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if check && out == "" {
				return usageError{fmt.Errorf("--check needs -o DIR, the committed output to compare with")}
			}
			if out != "" {
				if err := checkOutDirName("-o", out); err != nil {
					return err
				}
			}
			objs, err := renderDir(dirArg(args), o, getenv)
			if err != nil {
				return err
			}
			if out == "" {
				b, err := render.Encode(objs)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			files, err := render.Files(objs)
			if err != nil {
				return err
			}
			if check {
				diff, err := output.Diff(out, files)
				if err != nil {
					return err
				}
				if len(diff) > 0 {
					stderr := cmd.ErrOrStderr()
					fmt.Fprintf(stderr, "stowage: %s is stale:\n", out)
					for _, d := range diff {
						fmt.Fprintf(stderr, "  %s\n", d)
					}
					secrets := map[string]bool{}
					for _, o := range objs {
						if o.Kind == "Secret" {
							secrets[o.FileName()] = true
						}
					}
					writeCheckDiff(stderr, out, diff, files, secrets)
					// Advice that works: render -o refuses a directory
					// holding files stowage did not write.
					if err := output.CheckDir(out); err != nil {
						fmt.Fprintf(stderr, "%v.\nMove those files out of %s (or render into a directory of its own), then run `stowage render %s -o %s` and commit the result.\n", err, out, dirArg(args), out)
					} else {
						fmt.Fprintf(stderr, "Run `stowage render %s -o %s` and commit the result.\n", dirArg(args), out)
					}
					return errCheckFailed
				}
				return nil
			}
			if err := output.CheckPaths(output.Paths{ConfigDir: dirArg(args), RenderDir: out, RenderFlag: "-o"}); err != nil {
				return err
			}
			if err := output.CheckDir(out); err != nil {
				return err
			}
			return atomicfile.ReplaceDirContext(cmd.Context(), out, files)
		},
	}
	c.Flags().StringVarP(&o.profile, "profile", "p", "", "profile to render (optional when the config has one)")
	c.Flags().StringVarP(&out, "output", "o", "", "write one file per object and a kustomization.yaml into this directory")
	c.Flags().BoolVar(&check, "check", false, "compare with the files in -o DIR instead of writing; exit 1 when they differ")
	c.Flags().BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	return c
}
