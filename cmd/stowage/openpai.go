package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/internal/openpai"
	"github.com/stowage/stowage/internal/schema"
)

func newOpenPAI() *cobra.Command {
	c := &cobra.Command{
		Use:   "openpai",
		Short: "OpenPAI service selection and runtime package cache",
	}
	c.AddCommand(newOpenPAIServices())
	return c
}

// servicesReport is the -o json shape of `openpai services`.
type servicesReport struct {
	Version    string                    `json:"version"`
	Kept       []string                  `json:"kept"`
	Dropped    []string                  `json:"dropped"`
	StartOrder []string                  `json:"startOrder"`
	Paictl     string                    `json:"paictl"`
	Images     map[openpai.Role][]string `json:"images"`
	Bytes      []roleBytes               `json:"bytes"`
}

type roleBytes struct {
	Role           openpai.Role `json:"role"`
	Full           int64        `json:"fullBytes"`
	Reduced        int64        `json:"reducedBytes"`
	Saved          int64        `json:"savedBytes"`
	UnsizedFull    int          `json:"unsizedFull"`
	UnsizedReduced int          `json:"unsizedReduced"`
}

func newOpenPAIServices() *cobra.Command {
	var profile, format string
	c := &cobra.Command{
		Use:   "services [DIR]",
		Short: "Print the reduced OpenPAI service list of a profile, its images per node role and the bytes it saves",
		Long: `Print the services kept and dropped by the profile's OpenPAI selection (the
closure of the chosen features over the v1.5.0 prerequisite graph), the paictl
command that starts exactly them, the images per node role, and the bytes per
role of a full install versus the reduced one, from the image sizes observed
in OpenPAI issue #5381. Formats: table (default), json, markdown.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "table" && format != "json" && format != "markdown" {
				return usageError{fmt.Errorf("-o %q: want table, json or markdown", format)}
			}
			cfg, err := schema.Load(dirArg(args), schema.Options{AllowLiteralPasswords: true})
			if err != nil {
				return err
			}
			name, prof, err := cfg.Profile(profile)
			if err != nil {
				return err
			}
			if prof.OpenPAI == nil {
				return fmt.Errorf("profile %q has no openpai selection", name)
			}
			plan, err := openpai.Reduce(schema.Selection(prof.OpenPAI))
			if err != nil {
				return err
			}
			rep := report(plan)
			w := cmd.OutOrStdout()
			switch format {
			case "json":
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			case "markdown":
				return writeMarkdown(w, rep)
			default:
				return writeTable(w, rep)
			}
		},
	}
	c.Flags().StringVarP(&profile, "profile", "p", "", "profile whose openpai selection to use (optional when the config has one)")
	c.Flags().StringVarP(&format, "output", "o", "table", "output format: table, json or markdown")
	return c
}

func report(plan *openpai.Plan) servicesReport {
	rep := servicesReport{
		Version: plan.Version, Kept: plan.Kept, Dropped: plan.Dropped, StartOrder: plan.StartOrder,
		Paictl: "./paictl.py " + strings.Join(plan.PaictlArgs, " "),
		Images: map[openpai.Role][]string{},
	}
	for _, r := range []openpai.Role{openpai.RoleMaster, openpai.RoleWorker, openpai.RoleAll} {
		rep.Images[r] = append([]string{}, plan.Images[r]...)
	}
	for _, b := range plan.Bytes() {
		rep.Bytes = append(rep.Bytes, roleBytes{b.Role, b.Full, b.Reduced, b.Saved, b.UnknownFull, b.UnknownReduced})
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

func percent(part, whole int64) string {
	if whole == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}

func writeTable(w io.Writer, rep servicesReport) error {
	fmt.Fprintf(w, "OpenPAI %s: %d services kept, %d dropped\n\n", rep.Version, len(rep.Kept), len(rep.Dropped))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEPT\tDROPPED")
	for i := 0; i < max(len(rep.Kept), len(rep.Dropped)); i++ {
		fmt.Fprintf(tw, "%s\t%s\n", at(rep.Kept, i), at(rep.Dropped, i))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nstart: %s\n", rep.Paictl)
	for _, r := range []openpai.Role{openpai.RoleMaster, openpai.RoleWorker, openpai.RoleAll} {
		fmt.Fprintf(w, "\nimages on %s nodes:\n", r)
		for _, im := range rep.Images[r] {
			fmt.Fprintf(w, "  %s\n", im)
		}
	}
	fmt.Fprintln(w, "\nbytes per role (sizes observed in OpenPAI issue #5381):")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ROLE\tFULL\tREDUCED\tSAVED\tSAVED %\tUNSIZED (full/reduced)\t")
	for _, b := range rep.Bytes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t\n", b.Role, humanBytes(b.Full), humanBytes(b.Reduced),
			humanBytes(b.Saved), percent(b.Saved, b.Full), b.UnsizedFull, b.UnsizedReduced)
	}
	return tw.Flush()
}

func writeMarkdown(w io.Writer, rep servicesReport) error {
	fmt.Fprintf(w, "## OpenPAI %s: %d services kept, %d dropped\n\n", rep.Version, len(rep.Kept), len(rep.Dropped))
	fmt.Fprintf(w, "Start: `%s`\n\n", rep.Paictl)
	fmt.Fprintf(w, "| kept | dropped |\n|---|---|\n")
	for i := 0; i < max(len(rep.Kept), len(rep.Dropped)); i++ {
		fmt.Fprintf(w, "| %s | %s |\n", at(rep.Kept, i), at(rep.Dropped, i))
	}
	fmt.Fprintf(w, "\n| role | full | reduced | saved | saved %% | unsized (full/reduced) |\n|---|---:|---:|---:|---:|---:|\n")
	for _, b := range rep.Bytes {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d/%d |\n", b.Role, humanBytes(b.Full), humanBytes(b.Reduced),
			humanBytes(b.Saved), percent(b.Saved, b.Full), b.UnsizedFull, b.UnsizedReduced)
	}
	for _, r := range []openpai.Role{openpai.RoleMaster, openpai.RoleWorker, openpai.RoleAll} {
		fmt.Fprintf(w, "\n### Images on %s nodes\n\n", r)
		for _, im := range rep.Images[r] {
			fmt.Fprintf(w, "- `%s`\n", im)
		}
	}
	return nil
}

func at(ss []string, i int) string {
	if i < len(ss) {
		return ss[i]
	}
	return ""
}
