package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/internal/pkgcache"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/schema"
)

func newOpenPAI() *cobra.Command {
	c := &cobra.Command{
		Use:   "openpai",
		Short: "OpenPAI service selection and runtime package cache",
	}
	c.AddCommand(newOpenPAIServices(), newOpenPAIPackageCache())
	return c
}

// newOpenPAIPackageCache writes the profile's package cache rows as the
// package_cache_info file that the OpenPAI runtime image build reads:
// openpai-runtime v0.1.9's build/openpai-runtime.dockerfile copies
// src/package_cache/ into one stage per Ubuntu version and runs
// ubuntu_build.sh over it, and the job runtime installs from the cache
// baked into the image. Nothing in the cluster reads the file.
func newOpenPAIPackageCache() *cobra.Command {
	var profile, out, format string
	c := &cobra.Command{
		Use:   "package-cache [DIR]",
		Short: "Write the profile's package_cache_info, the file the OpenPAI runtime image build reads",
		Long: `Write the profile's packageCache rows as package_cache_info (OpenPAI v1.5.0's
three-column format group,os,packages, sorted by group then os) to stdout, or
atomically to FILE with --output-file (- is stdout). The first line is the
comment "# written by stowage openpai package-cache ..." (ubuntu_build.sh skips
'#' lines). FILE must be new or one this command wrote (it starts with that
line), never the config, the lock or a file stowage did not write. -o FILE, the
spelling before -o became the output format on every command, still works,
with a note on stderr.

The file is read only when the runtime image is built: put it at
src/package_cache/package_cache_info of an openpai-runtime v0.1.9 checkout
(the base of OpenPAI v1.5.0's openpai-runtime image) and build
build/openpai-runtime.dockerfile; its cache stages download the packages and
the job runtime installs them from the image, offline. Push that image under
the reference the reduced service list names for openpai-runtime, then
` + "`stowage lock`" + ` (or bump) pins its digest and ` + "`stowage mirror`" + ` carries it.`,
		Example: `  # print the file
  stowage openpai package-cache examples/openpai-offline

  # write it into an openpai-runtime checkout
  stowage openpai package-cache examples/openpai-offline --output-file src/package_cache/package_cache_info`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			alias, err := pathAlias(cmd.ErrOrStderr(), "openpai package-cache", format, "--output-file", cmd.Flags().Changed("output-file"), []string{"text"})
			if err != nil {
				return err
			}
			if alias != "" {
				out = alias
			}
			if out == stdoutName {
				out = ""
			}
			if out != "" {
				dir := dirArg(args)
				if err := output.CheckPackageCache(out, dir, filepath.Join(dir, lock.FileName)); err != nil {
					return err
				}
			}
			cfg, err := schema.Load(dirArg(args), schemaOptions(cmd.Context(), schema.Options{AllowLiteralPasswords: true})...)
			if err != nil {
				return err
			}
			name, prof, err := cfg.Profile(profile)
			if err != nil {
				return err
			}
			if len(prof.PackageCache) == 0 {
				return fmt.Errorf("profile %q has no packageCache rows: add profiles.%s.packageCache entries (group, os, packages)", name, name)
			}
			// The marker line leads on stdout too, so that a file written
			// either way is the same bytes and -o may replace it later.
			data := []byte(output.PackageCacheMarker + pkgcache.Format(pkgcache.RowsOf(prof.PackageCache)))
			if out == "" {
				_, err := cmd.OutOrStdout().Write(data)
				return err
			}
			return atomicfile.WriteFile(out, data, 0o644)
		},
	}
	c.Flags().StringVarP(&profile, "profile", "p", "", "profile whose packageCache to write (optional when the config has one)")
	c.Flags().StringVar(&out, "output-file", "", "file to write (atomically) instead of stdout, e.g. src/package_cache/package_cache_info; - is stdout")
	c.Flags().StringVarP(&format, "output", "o", "text", "text: the package_cache_info format (the only one)")
	return c
}

func newOpenPAIServices() *cobra.Command {
	var profile, format string
	c := &cobra.Command{
		Use:   "services [DIR]",
		Short: "Print the reduced OpenPAI service list of a profile, its images per node role and the bytes it saves",
		Long: `Print the services kept and dropped by the profile's OpenPAI selection (the
closure of the chosen features over the v1.5.0 prerequisite graph), the paictl
command that starts exactly them, the images per node role (as the rendered
ConfigMap lists them: at the site registry when one applies, pinned when DIR
has a lock), and the bytes per role of a full install versus the reduced one,
from the unpacked image sizes observed in OpenPAI issue #5381, and, when DIR
has a lock, the reduced set's bytes to mirror per role from the lock's recorded sizes (config plus
compressed layers, every platform). Formats: text (default), json, yaml
(` + printer.MustKeys(v1alpha1.OpenPAIServicesReport{}) + `), markdown.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format = formatAlias(format)
			if err := printer.Check("-o", format, servicesFormats...); err != nil {
				return usageError{err}
			}
			src, err := source.LoadDir(dirArg(args), source.LoadOptions{AllowLiteralPasswords: true, Schema: schemaOptions(cmd.Context())})
			if err != nil {
				return err
			}
			lf, err := src.ReadLock(nil)
			if err != nil {
				return err
			}
			// Without a lock nothing is pinned but what the config writes.
			l := lf.Lock
			if !lf.Exists {
				l = nil
			}
			// The profile's image plan reduces the selection, decides the
			// site and pins what the lock has.
			pl, err := plan.Build(src.Config, profile, l)
			if err != nil {
				return err
			}
			if pl.OpenPAI == nil {
				return fmt.Errorf("profile %q has no openpai selection", pl.Profiles[0])
			}
			rep, err := openpai.ServicesReport(pl.OpenPAI, func(r openpai.Role) ([]string, error) { return pl.OpenPAIList(r, l) }, l)
			if err != nil {
				return err
			}
			if format == "markdown" {
				return rep.WriteMarkdown(cmd.OutOrStdout())
			}
			return printer.Print(cmd.OutOrStdout(), format, rep)
		},
	}
	c.Flags().StringVarP(&profile, "profile", "p", "", "profile whose openpai selection to use (optional when the config has one)")
	c.Flags().StringVarP(&format, "output", "o", "text", "output format: text, json, yaml or markdown; json and yaml: "+printer.MustKeys(v1alpha1.OpenPAIServicesReport{}))
	return c
}

// servicesFormats are the -o values of openpai services: the printer's,
// and markdown for a runbook.
var servicesFormats = append(slices.Clone(printer.Formats), "markdown")
