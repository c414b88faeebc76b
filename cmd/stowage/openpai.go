package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/atomicfile"
	"github.com/stowage/stowage/internal/imageref"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/internal/pkgcache"
	"github.com/stowage/stowage/internal/plan"
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

// servicesReport is the -o json shape of `openpai services`.
type servicesReport struct {
	Version string   `json:"version"`
	Kept    []string `json:"kept"`
	// KeptBy says why each kept service is kept.
	KeptBy     map[string]keptReason `json:"keptBy"`
	Dropped    []string              `json:"dropped"`
	StartOrder []string              `json:"startOrder"`
	Paictl     string                `json:"paictl"`
	// Images are each role's images as the rendered OpenPAI ConfigMap
	// lists them in images.<role>.list: at the site registry when a site
	// applies (plan.Site), pinned when DIR's lock has them.
	Images map[openpai.Role][]string `json:"images"`
	// SourceImages are the same images as OpenPAI's registry settings
	// name them, the spelling the lock is keyed by.
	SourceImages map[openpai.Role][]string `json:"sourceImages"`
	// Bytes are unpacked image sizes observed in OpenPAI issue #5381.
	Bytes []roleBytes `json:"bytes"`
	// Locked are the reduced set's bytes to mirror from the lock's
	// recorded sizes (compressed blobs); absent without a lock.
	Locked []roleLocked `json:"locked,omitempty"`
}

// roleLocked is one role's reduced-set images as the lock records them:
// config plus compressed layers, every platform of an index, summed per
// image (a layer shared by two images counts in each; `stowage mirror
// --dry-run` counts each blob once).
type roleLocked struct {
	Role            openpai.Role `json:"role"`
	Images          int          `json:"images"`
	CompressedBytes int64        `json:"compressedBytes"`
	// Unlocked counts the images the lock has no entry or size for.
	Unlocked int `json:"unlocked"`
}

// keptReason is the feature (empty when the config's keep list names the
// root) and the prerequisite chain from that root to the service.
type keptReason struct {
	Feature string   `json:"feature,omitempty"`
	Chain   []string `json:"chain"`
}

// roleBytes holds one role's unpacked sizes; the Unsized* counts are images
// without an observed size, left out of the byte sums, so a sum with a
// non-zero count is a lower bound (UnsizedSaved: dropped images without a
// size, Saved is then at least what it says).
type roleBytes struct {
	Role           openpai.Role `json:"role"`
	Full           int64        `json:"fullBytes"`
	Reduced        int64        `json:"reducedBytes"`
	Saved          int64        `json:"savedBytes"`
	UnsizedFull    int          `json:"unsizedFull"`
	UnsizedReduced int          `json:"unsizedReduced"`
	UnsizedSaved   int          `json:"unsizedSaved"`
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
compressed layers, every platform). Formats: text (default), json, markdown.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format = formatAlias(format)
			if format != "text" && format != "json" && format != "markdown" {
				return usageError{fmt.Errorf("-o %q: want text, json or markdown", format)}
			}
			src, err := source.LoadDir(dirArg(args), source.LoadOptions{AllowLiteralPasswords: true, Schema: schemaOptions(cmd.Context())})
			if err != nil {
				return err
			}
			cfg := src.Config
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
			pl, err := plan.Build(cfg, profile, l)
			if err != nil {
				return err
			}
			red := pl.OpenPAI
			if red == nil {
				return fmt.Errorf("profile %q has no openpai selection", pl.Profiles[0])
			}
			rep := report(red)
			for r := range rep.Images {
				if rep.Images[r], err = pl.OpenPAIList(r, l); err != nil {
					return err
				}
			}
			if l != nil {
				rep.Locked = lockedBytes(red, l)
			}
			w := cmd.OutOrStdout()
			switch format {
			case "json":
				return writeReport(w, rep)
			case "markdown":
				return writeMarkdown(w, rep)
			default:
				return writeTable(w, rep)
			}
		},
	}
	c.Flags().StringVarP(&profile, "profile", "p", "", "profile whose openpai selection to use (optional when the config has one)")
	c.Flags().StringVarP(&format, "output", "o", "text", "output format: text, json or markdown")
	return c
}

func report(red *openpai.Reduction) servicesReport {
	rep := servicesReport{
		Version: red.Version, Kept: red.Kept, Dropped: red.Dropped, StartOrder: red.StartOrder,
		Paictl: "./paictl.py " + strings.Join(red.PaictlArgs, " "),
		Images: map[openpai.Role][]string{}, SourceImages: map[openpai.Role][]string{},
		KeptBy: map[string]keptReason{},
	}
	for k, r := range red.KeptBy {
		rep.KeptBy[k] = keptReason{Feature: r.Feature, Chain: r.Chain}
	}
	for _, r := range []openpai.Role{openpai.RoleMaster, openpai.RoleWorker, openpai.RoleAll} {
		rep.Images[r] = append([]string{}, red.Images[r]...)
		rep.SourceImages[r] = append([]string{}, red.Images[r]...)
	}
	for _, b := range red.Bytes() {
		rep.Bytes = append(rep.Bytes, roleBytes{b.Role, b.Full, b.Reduced, b.Saved, b.UnknownFull, b.UnknownReduced,
			b.UnknownFull - b.UnknownReduced})
	}
	return rep
}

// humanBytes prints decimal units as docker does (1.06GB = 1,060,000,000).
func humanBytes(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.2f%cB", float64(n)/float64(div), "kMGTPE"[exp])
}

// sized prints n, followed by "+ N unsized" when unsized images were left
// out of it, so an unknown never reads as a small number.
func sized(n int64, unsized int) string {
	if unsized > 0 {
		return fmt.Sprintf("%s + %d unsized", humanBytes(n), unsized)
	}
	return humanBytes(n)
}

// reason prints why a kept service is kept: "feature F: a -> b" or
// "keep: a -> b".
func (r keptReason) String() string {
	return openpai.Reason{Feature: r.Feature, Chain: r.Chain}.String()
}

// percent prints part as a share of whole; "?" when either leaves out
// unsized images, "-" when whole is 0.
func percent(part, whole int64, unsized int) string {
	if unsized > 0 {
		return "?"
	}
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}

func writeTable(w io.Writer, rep servicesReport) error {
	fmt.Fprintf(w, "OpenPAI %s: %d services kept, %d dropped\n\n", rep.Version, len(rep.Kept), len(rep.Dropped))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEPT\tKEPT BY (feature or keep: prerequisite chain)")
	for _, k := range rep.Kept {
		fmt.Fprintf(tw, "%s\t%s\n", k, rep.KeptBy[k])
	}
	tw.Flush()
	fmt.Fprintf(w, "\ndropped: %s\n", strings.Join(rep.Dropped, ", "))
	fmt.Fprintf(w, "\nstart: %s\n", rep.Paictl)
	for _, r := range []openpai.Role{openpai.RoleMaster, openpai.RoleWorker, openpai.RoleAll} {
		fmt.Fprintf(w, "\nimages on %s nodes:\n", r)
		for _, im := range rep.Images[r] {
			fmt.Fprintf(w, "  %s\n", im)
		}
	}
	if len(rep.Locked) > 0 {
		fmt.Fprintln(w, "\nbytes to mirror per role, reduced set (from the lock: config + compressed layers, every platform, summed per image):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "ROLE\tIMAGES\tCOMPRESSED (lock)\tNOT IN LOCK\t")
		for _, b := range rep.Locked {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t\n", b.Role, b.Images, humanBytes(b.CompressedBytes), b.Unlocked)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nbytes per role (unpacked image sizes observed in OpenPAI issue #5381; \"+ N unsized\": N images have no observed size and are not counted):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ROLE\tFULL\tREDUCED\tSAVED\tSAVED %\t")
	for _, b := range rep.Bytes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", b.Role, sized(b.Full, b.UnsizedFull), sized(b.Reduced, b.UnsizedReduced),
			sized(b.Saved, b.UnsizedSaved), percent(b.Saved, b.Full, b.UnsizedFull))
	}
	return tw.Flush()
}

func writeMarkdown(w io.Writer, rep servicesReport) error {
	fmt.Fprintf(w, "## OpenPAI %s: %d services kept, %d dropped\n\n", rep.Version, len(rep.Kept), len(rep.Dropped))
	fmt.Fprintf(w, "Start: `%s`\n\n", rep.Paictl)
	fmt.Fprintf(w, "| kept | kept by (feature or keep: prerequisite chain) |\n|---|---|\n")
	for _, k := range rep.Kept {
		fmt.Fprintf(w, "| %s | %s |\n", k, rep.KeptBy[k])
	}
	fmt.Fprintf(w, "\nDropped: %s\n", strings.Join(rep.Dropped, ", "))
	if len(rep.Locked) > 0 {
		fmt.Fprintf(w, "\nBytes to mirror, reduced set, from the lock (config + compressed layers, every platform, summed per image):\n\n| role | images | compressed (lock) | not in lock |\n|---|---:|---:|---:|\n")
		for _, b := range rep.Locked {
			fmt.Fprintf(w, "| %s | %d | %s | %d |\n", b.Role, b.Images, humanBytes(b.CompressedBytes), b.Unlocked)
		}
	}
	fmt.Fprintf(w, "\nUnpacked image sizes observed in OpenPAI issue #5381 (\"+ N unsized\": N images have no observed size and are not counted):\n")
	fmt.Fprintf(w, "\n| role | full | reduced | saved | saved %% |\n|---|---:|---:|---:|---:|\n")
	for _, b := range rep.Bytes {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", b.Role, sized(b.Full, b.UnsizedFull), sized(b.Reduced, b.UnsizedReduced),
			sized(b.Saved, b.UnsizedSaved), percent(b.Saved, b.Full, b.UnsizedFull))
	}
	for _, r := range []openpai.Role{openpai.RoleMaster, openpai.RoleWorker, openpai.RoleAll} {
		fmt.Fprintf(w, "\n### Images on %s nodes\n\n", r)
		for _, im := range rep.Images[r] {
			fmt.Fprintf(w, "- `%s`\n", im)
		}
	}
	return nil
}

// lockedBytes sums, per role, the lock's recorded size of each reduced-set
// image: a manifest's size, or the sizes of every child of an index (what
// `stowage mirror` copies).
func lockedBytes(red *openpai.Reduction, l *lock.Lock) []roleLocked {
	var out []roleLocked
	for _, r := range []openpai.Role{openpai.RoleMaster, openpai.RoleWorker, openpai.RoleAll} {
		rl := roleLocked{Role: r, Images: len(red.Images[r])}
		for _, s := range red.Images[r] {
			ref, err := imageref.Parse(s)
			if err != nil {
				rl.Unlocked++
				continue
			}
			e, ok := l.Lookup(ref.Key())
			size := e.Size
			for _, p := range e.Platforms {
				size += p.Size
			}
			if !ok || size == 0 {
				rl.Unlocked++
				continue
			}
			rl.CompressedBytes += size
		}
		out = append(out, rl)
	}
	return out
}
