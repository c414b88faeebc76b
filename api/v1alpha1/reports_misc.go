package v1alpha1

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/words"
)

// VersionReport is what `stowage version -o json|yaml` prints: the
// module version, the VCS commit and the Go toolchain of the binary.
type VersionReport struct {
	// Version is the module version ("(devel)" for a source build).
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from; empty when
	// the build recorded none.
	Commit string `json:"commit"`
	// Go is the Go toolchain version ("go1.25.1").
	Go string `json:"go"`

	// Line is the one line `stowage version` and --version print; text
	// output only.
	Line string `json:"-"`
}

// WriteText writes the version line and a newline.
func (r VersionReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintln(w, r.Line)
	return err
}

// InitReport is what `stowage init -o json|yaml` prints: the directory
// init wrote into and the files it wrote, config first.
type InitReport struct {
	// Dir is the directory as given (default ".").
	Dir string `json:"dir"`
	// Files are the config and the lock, each DIR joined with its name.
	Files []string `json:"files"`
}

// WriteText writes the one line naming the files and the next commands,
// the paths escaped (internal/escape).
func (r InitReport) WriteText(w io.Writer) error {
	files := make([]string, len(r.Files))
	for i, f := range r.Files {
		files[i] = escape.Line(f)
	}
	dir := escape.Line(r.Dir)
	_, err := fmt.Fprintf(w, "wrote %s; next: stowage lock %s && stowage vet %s\n", strings.Join(files, " and "), dir, dir)
	return err
}

// OpenPAIRoles are the node roles `openpai services` reports, in the
// order it prints them.
var OpenPAIRoles = []string{"master", "worker", "all"}

// OpenPAIServicesReport is what `stowage openpai services -o json|yaml`
// prints: the services a profile's OpenPAI selection keeps and drops,
// why each is kept, the paictl command that starts them, the images per
// node role and the bytes the reduction saves.
type OpenPAIServicesReport struct {
	// Version is the OpenPAI release the selection is for ("v1.5.0").
	Version string `json:"version"`
	// Kept are the services started, in name order.
	Kept []string `json:"kept"`
	// KeptBy says why each kept service is kept.
	KeptBy map[string]OpenPAIKeptReason `json:"keptBy"`
	// Dropped are the services not started, in name order.
	Dropped []string `json:"dropped"`
	// StartOrder is the order paictl starts the kept services in.
	StartOrder []string `json:"startOrder"`
	// Paictl is the command that starts exactly the kept services.
	Paictl string `json:"paictl"`
	// Images are each role's images as the rendered OpenPAI ConfigMap
	// lists them in images.<role>.list: at the site registry when a site
	// applies, pinned when DIR's lock has them. Keyed by role.
	Images map[string][]string `json:"images"`
	// SourceImages are the same images as OpenPAI's registry settings
	// name them, the spelling the lock is keyed by.
	SourceImages map[string][]string `json:"sourceImages"`
	// Bytes are unpacked image sizes observed in OpenPAI issue #5381.
	Bytes []OpenPAIRoleBytes `json:"bytes"`
	// Locked are the reduced set's bytes to mirror from the lock's
	// recorded sizes (compressed blobs); absent without a lock.
	Locked []OpenPAIRoleLocked `json:"locked,omitempty"`
}

// OpenPAIKeptReason is why a service is kept: the feature (empty when the
// config's keep list names the root) and the prerequisite chain from that
// root to the service.
type OpenPAIKeptReason struct {
	Feature string   `json:"feature,omitempty"`
	Chain   []string `json:"chain"`
}

// String is "feature job-submission: rest-server -> postgresql", or
// "keep: pylon" for a root the keep list names.
func (r OpenPAIKeptReason) String() string {
	by := "keep"
	if r.Feature != "" {
		by = "feature " + r.Feature
	}
	return by + ": " + strings.Join(r.Chain, " -> ")
}

// OpenPAIRoleBytes holds one role's unpacked sizes in bytes; the Unsized*
// counts are images without an observed size, left out of the byte sums,
// so a sum with a non-zero count is a lower bound (UnsizedSaved: dropped
// images without a size, Saved is then at least what it says).
type OpenPAIRoleBytes struct {
	Role           string `json:"role"`
	Full           int64  `json:"fullBytes"`
	Reduced        int64  `json:"reducedBytes"`
	Saved          int64  `json:"savedBytes"`
	UnsizedFull    int    `json:"unsizedFull"`
	UnsizedReduced int    `json:"unsizedReduced"`
	UnsizedSaved   int    `json:"unsizedSaved"`
}

// OpenPAIRoleLocked is one role's reduced-set images as the lock records
// them: config plus compressed layers, every platform of an index, summed
// per image (a layer shared by two images counts in each; `stowage mirror
// --dry-run` counts each blob once).
type OpenPAIRoleLocked struct {
	Role            string `json:"role"`
	Images          int    `json:"images"`
	CompressedBytes int64  `json:"compressedBytes"`
	// Unlocked counts the images the lock has no entry or size for.
	Unlocked int `json:"unlocked"`
}

// sized prints n, followed by "+ N unsized" when unsized images were left
// out of it, so an unknown never reads as a small number.
func sized(n int64, unsized int) string {
	if unsized > 0 {
		return fmt.Sprintf("%s + %d unsized", words.Bytes(n), unsized)
	}
	return words.Bytes(n)
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

// WriteText writes the report for a terminal: the counts, the kept
// services with their reasons, the dropped ones, the paictl command, the
// images per role (escaped: they carry the config's registry settings)
// and the byte tables.
func (r OpenPAIServicesReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "OpenPAI %s: %s kept, %d dropped\n\n", r.Version, words.Count(len(r.Kept), "service"), len(r.Dropped))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEPT\tKEPT BY (feature or keep: prerequisite chain)")
	for _, k := range r.Kept {
		fmt.Fprintf(tw, "%s\t%s\n", k, r.KeptBy[k])
	}
	tw.Flush()
	fmt.Fprintf(w, "\ndropped: %s\n", strings.Join(r.Dropped, ", "))
	fmt.Fprintf(w, "\nstart: %s\n", escape.Line(r.Paictl))
	for _, role := range OpenPAIRoles {
		fmt.Fprintf(w, "\nimages on %s nodes:\n", role)
		for _, im := range r.Images[role] {
			fmt.Fprintf(w, "  %s\n", escape.Line(im))
		}
	}
	if len(r.Locked) > 0 {
		fmt.Fprintln(w, "\nbytes to mirror per role, reduced set (from the lock: config + compressed layers, every platform, summed per image):")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "ROLE\tIMAGES\tCOMPRESSED (lock)\tNOT IN LOCK\t")
		for _, b := range r.Locked {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t\n", b.Role, b.Images, words.Bytes(b.CompressedBytes), b.Unlocked)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nbytes per role (unpacked image sizes observed in OpenPAI issue #5381; \"+ N unsized\": N images have no observed size and are not counted):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ROLE\tFULL\tREDUCED\tSAVED\tSAVED %\t")
	for _, b := range r.Bytes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", b.Role, sized(b.Full, b.UnsizedFull), sized(b.Reduced, b.UnsizedReduced),
			sized(b.Saved, b.UnsizedSaved), percent(b.Saved, b.Full, b.UnsizedFull))
	}
	return tw.Flush()
}

// WriteMarkdown writes the report as markdown for a runbook: the same
// facts as WriteText, as headings, tables and lists.
func (r OpenPAIServicesReport) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "## OpenPAI %s: %s kept, %d dropped\n\n", r.Version, words.Count(len(r.Kept), "service"), len(r.Dropped))
	fmt.Fprintf(w, "Start: `%s`\n\n", escape.Line(r.Paictl))
	fmt.Fprintf(w, "| kept | kept by (feature or keep: prerequisite chain) |\n|---|---|\n")
	for _, k := range r.Kept {
		fmt.Fprintf(w, "| %s | %s |\n", k, r.KeptBy[k])
	}
	fmt.Fprintf(w, "\nDropped: %s\n", strings.Join(r.Dropped, ", "))
	if len(r.Locked) > 0 {
		fmt.Fprintf(w, "\nBytes to mirror, reduced set, from the lock (config + compressed layers, every platform, summed per image):\n\n| role | images | compressed (lock) | not in lock |\n|---|---:|---:|---:|\n")
		for _, b := range r.Locked {
			fmt.Fprintf(w, "| %s | %d | %s | %d |\n", b.Role, b.Images, words.Bytes(b.CompressedBytes), b.Unlocked)
		}
	}
	fmt.Fprintf(w, "\nUnpacked image sizes observed in OpenPAI issue #5381 (\"+ N unsized\": N images have no observed size and are not counted):\n")
	fmt.Fprintf(w, "\n| role | full | reduced | saved | saved %% |\n|---|---:|---:|---:|---:|\n")
	for _, b := range r.Bytes {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", b.Role, sized(b.Full, b.UnsizedFull), sized(b.Reduced, b.UnsizedReduced),
			sized(b.Saved, b.UnsizedSaved), percent(b.Saved, b.Full, b.UnsizedFull))
	}
	for _, role := range OpenPAIRoles {
		fmt.Fprintf(w, "\n### Images on %s nodes\n\n", role)
		for _, im := range r.Images[role] {
			fmt.Fprintf(w, "- `%s`\n", escape.Line(im))
		}
	}
	return nil
}
