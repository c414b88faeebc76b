package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/render"
	"github.com/stowage/stowage/internal/source"
)

// renderFormats are render's -o values: yaml and text are the same
// (manifests, or --check's text report on stderr), json is --check's
// report; yaml given explicitly with --check is its report as YAML.
var renderFormats = []string{"yaml", "text", "json"}

func newRender(getenv env) *cobra.Command {
	var o loadOptions
	var out, outDir string
	var check bool
	var format, oldFormat string
	c := &cobra.Command{
		Use:   "render [DIR]",
		Short: "Render a profile of the config in DIR (default .) with digests from DIR/stowage.lock.yaml",
		Long: `Render a profile: DaemonSets that pre-pull every image pinned to its digest,
pull Secrets, records ConfigMaps, the OpenPAI service ConfigMap and the package
cache ConfigMap, and, when the profile has policy:, the admission policies that
verify its images at the site (a Kyverno ClusterPolicy or ImageValidatingPolicies,
policy-controller ClusterImagePolicies and TrustRoots, a ConfigMap holding a
CRI-O policy.json fragment; see docs/signatures.md). A kind that cannot read the
signature format the lock records for an image (a Sigstore bundle: only Kyverno's
ImageValidatingPolicy, and policy-controller keyless, read it) is refused, naming
the image and the kind. Never contacts a registry: digests come from the lock.

Without --output-dir, writes one multi-document YAML stream to stdout. With
--output-dir DIR (-d), writes one file per object plus a kustomization.yaml,
replacing DIR atomically. With --check (needs --output-dir), writes nothing and
exits 1 listing the files that differ, with a unified diff of each changed one
(bounded; never a Secret's lines).

--check -o json (or -o yaml) prints one report on stdout, also when render
fails: ` + printer.MustKeys(v1alpha1.RenderCheckReport{}) + `. changed lists
each file that differs ` + printer.MustKeys(v1alpha1.FileDiff{}) + ` (status changed, missing or extra);
foreign the entries of the directory stowage did not write (render
--output-dir refuses it until they are moved); diff the unified diff printed
on stderr; errors every other problem ` + printer.MustKeys(v1alpha1.ReportError{}) + `.
Messages still go to stderr.

-o DIR, the spelling of --output-dir before -o became the output format on
every command, still works, with a note on stderr.`,
		Example: `  # the manifests of the only profile, on stdout
  stowage render examples/openpai-offline

  # one file per object and a kustomization.yaml, for Argo CD or Flux
  stowage render platform/prepull --profile prod --output-dir clusters/prod/prepull

  # CI: fail when the committed output is stale, with a JSON report
  stowage render platform/prepull -d clusters/prod/prepull --check -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if cmd.Flags().Changed("format") && !cmd.Flags().Changed("output") {
				format = oldFormat
			}
			alias, err := pathAlias(cmd.ErrOrStderr(), "render", format, "--output-dir", cmd.Flags().Changed("output-dir"), renderFormats)
			if err != nil {
				return err
			}
			if alias != "" {
				out, format = alias, "yaml"
				if cmd.Flags().Changed("format") {
					format = oldFormat
				}
			} else {
				out = outDir
			}
			if err := refuseStdout("--output-dir", out, "render writes the manifests to stdout without --output-dir; give a directory to write one file per object"); err != nil {
				return err
			}
			if check && out == "" {
				return usageError{fmt.Errorf("--check needs --output-dir DIR, the committed output to compare with")}
			}
			if format == "json" && !check {
				return usageError{fmt.Errorf("-o json is the report of --check; without --check, render writes the manifests as YAML (to stdout, or into --output-dir)")}
			}
			rep := v1alpha1.NewRenderCheckReport(out)
			if format == "json" || format == "yaml" && check && alias == "" && cmd.Flags().Changed("output") {
				defer func() { err = writeCheckReport(cmd.OutOrStdout(), format, rep, err) }()
			}
			if err := checkDirArg(cmd, args); err != nil {
				return err
			}
			objs, err := renderDir(cmd.Context(), dirArg(args), o, getenv)
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
				if err := output.CheckRender(cmd.ErrOrStderr(), rep, dirArg(args), out, objs, files); !errors.Is(err, output.ErrStale) {
					return err
				}
				return errCheckFailed
			}
			if err := output.CheckPaths(output.Paths{ConfigDir: dirArg(args), RenderDir: out, RenderFlag: "--output-dir"}); err != nil {
				return err
			}
			if err := output.CheckDir(out, "--output-dir"); err != nil {
				return err
			}
			return atomicfile.ReplaceDirModes(cmd.Context(), out, files, render.FileModes(objs))
		},
	}
	c.Flags().StringVarP(&o.profile, "profile", "p", "", "profile to render (optional when the config has one)")
	c.Flags().StringVarP(&outDir, "output-dir", "d", "", "write one file per object and a kustomization.yaml into this directory, replacing it")
	c.Flags().BoolVar(&check, "check", false, "compare with the files in --output-dir DIR instead of writing; exit 1 when they differ")
	c.Flags().StringVarP(&format, "output", "o", "yaml", "yaml (the manifests; with --check, the text report on stderr), or with --check json or yaml: "+printer.MustKeys(v1alpha1.RenderCheckReport{})+" on stdout, also when render fails")
	c.Flags().StringVar(&oldFormat, "format", "text", "the format of --check's report")
	_ = c.Flags().MarkDeprecated("format", "use -o json")
	c.Flags().BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	return c
}

// writeCheckReport prints rep, render --check's report, in format (json
// or yaml, internal/printer) with render's outcome err, and returns err
// unchanged (exit code and stderr as they are). A check that found
// differences is not an error (Changed says them); a usage error prints
// no report.
func writeCheckReport(w io.Writer, format string, rep *v1alpha1.RenderCheckReport, err error) error {
	if isUsage(err) {
		return err
	}
	rep.OK = err == nil
	if err != nil && !errors.Is(err, errCheckFailed) {
		rep.Errors = source.ReportErrors(err)
	}
	if werr := printer.Print(w, format, rep); werr != nil && err == nil {
		return werr
	}
	return err
}
