package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/render"
)

func newRender(getenv env) *cobra.Command {
	var o loadOptions
	var out string
	var check bool
	var format string
	c := &cobra.Command{
		Use:   "render [DIR]",
		Short: "Render a profile of the config in DIR (default .) with digests from DIR/stowage.lock.yaml",
		Long: `Render a profile: DaemonSets that pre-pull every image pinned to its digest,
pull Secrets, records ConfigMaps, the OpenPAI service ConfigMap and the package
cache ConfigMap. Never contacts a registry: digests come from the lock.

Without -o, writes one multi-document YAML stream to stdout. With -o DIR, writes
one file per object plus a kustomization.yaml, replacing DIR atomically. With
--check (needs -o), writes nothing and exits 1 listing the files that differ,
with a unified diff of each changed one (bounded; never a Secret's lines).

--check --format json prints one JSON object on stdout, also when render
fails: {ok, dir, changed, foreign, diff, errors}. changed lists each file that
differs {file, status: changed|missing|extra}; foreign the entries of the
directory stowage did not write (render -o refuses it until they are moved);
diff the unified diff printed on stderr; errors every other problem {file,
line, column, field, message}. Messages still go to stderr.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if check && out == "" {
				return usageError{fmt.Errorf("--check needs -o DIR, the committed output to compare with")}
			}
			if format != "text" && format != "json" {
				return usageError{fmt.Errorf("--format %q: want text or json", format)}
			}
			if cmd.Flags().Changed("format") && !check {
				return usageError{fmt.Errorf("--format is the output of --check; without --check, render writes manifests (-o is their directory)")}
			}
			rep := newCheckReport(out)
			if format == "json" {
				defer func() { err = rep.write(cmd.OutOrStdout(), err) }()
			}
			if err := checkDirArg(cmd, args); err != nil {
				return err
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
				return renderCheck(cmd.ErrOrStderr(), rep, dirArg(args), out, objs, files)
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
	c.Flags().StringVar(&format, "format", "text", "with --check: text, or json: {ok, dir, changed, foreign, diff, errors} on stdout, also when render fails")
	c.Flags().BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	return c
}
