//go:build !stowagefront

package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/bump"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/words"
)

// bumpOptions are the flags of stowage bump.
type bumpOptions struct {
	o         loadOptions
	ro        registryOptions
	prBody    string
	format    string
	exitCode  bool
	renderOut string
	keepGoing bool
}

func newBump(getenv env) *cobra.Command {
	b := &bumpOptions{}
	b.o.deadline = &b.ro.runTimeout
	c := &cobra.Command{
		Use:   "bump [DIR]",
		Short: "Resolve every tag of DIR's config (default .) again and rewrite DIR/stowage.lock.yaml",
		Long: `Resolve every tag again, for the digest-bump bot: one HEAD per image, and a read
of the manifest only when its digest changed. Pins (digests written in the
config) are checked to still exist, never moved. The lock is rewritten
atomically when an entry changed, and left untouched when any image fails
(all or nothing), unless --keep-going: then the images that resolved are
bumped, the failed ones keep their old entries, and bump exits 1 naming each
failure after writing. Config files are never rewritten.

Prints a pull request title and a markdown body: a table of image, tag, old and
new digest, kind (with a note when it changed), and the environments and pullers
affected. -o json or -o yaml prints the same as a report,
` + printer.MustKeys(v1alpha1.BumpReport{}) + `, with a branch name derived
from the change set (the same change always gets the same branch). --pr-body writes the
body to a file (not -: the body is on stdout already). With --render OUTDIR the profile (--profile) is rendered again
into OUTDIR, so the pull request carries the manifests too. --exit-code exits 1
when something changed, as git diff --exit-code does.` + kustomizationHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runBump(cmd, dirArg(args), b, getenv) },
	}
	c.Flags().StringVarP(&b.o.profile, "profile", "p", "", "profile --render renders (optional when the config has one)")
	c.Flags().StringVar(&b.prBody, "pr-body", "", "also write the pull request body (markdown) to this file")
	c.Flags().StringVarP(&b.format, "output", "o", "text", "text (title and body), json or yaml: "+printer.MustKeys(v1alpha1.BumpReport{}))
	c.Flags().BoolVar(&b.exitCode, "exit-code", false, "exit 1 when the lock (or the --render output) changed")
	c.Flags().BoolVar(&b.keepGoing, "keep-going", false, "when images fail, still bump the others (the failed keep their old entries) and exit 1 naming the failures")
	c.Flags().StringVar(&b.renderOut, "render", "", "also render the profile into this directory with the new digests")
	c.Flags().BoolVar(&b.o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	b.o.addRootFlag(c.Flags())
	b.ro.addFlags(c.Flags())
	return c
}

// runBump is stowage bump on dir: the flags checked, the source loaded,
// bump.Run's transaction (every tag resolved again; the lock, the
// --render directory and the --pr-body file written together or not at
// all) and the pull request title and body printed.
func runBump(cmd *cobra.Command, dir string, b *bumpOptions, getenv env) error {
	o, format, prBody, renderOut := b.o, b.format, b.prBody, b.renderOut
	if err := printer.Check("-o", format); err != nil {
		return usageError{err}
	}
	if err := refuseStdout("--pr-body", prBody, "stdout carries the title and body already (or, with -o json, the report holding the body); give a file"); err != nil {
		return err
	}
	if err := refuseStdout("--render", renderOut, "--render is the directory the profile is rendered into; give a directory"); err != nil {
		return err
	}
	src, images, old, data, err := lockInputs(cmd.Context(), cmd.ErrOrStderr(), dir, o, nil)
	if err != nil {
		return err
	}
	if err := src.OwnLock(); err != nil {
		return err
	}
	if src.Kustomization != nil && renderOut != "" {
		return usageError{fmt.Errorf("--render is for a config directory; %s is a kustomization, which kustomize renders with the function", dir)}
	}
	lockRoot, lockRel := src.LockIn()
	res, err := bump.Run(cmd.Context(), bump.Input{
		Config: src.Config, Dir: dir, LockPath: src.LockPath, LockRoot: lockRoot, LockRel: lockRel, Old: old, OldData: data, Images: images,
		RenderDir: renderOut, Profile: o.profile, Getenv: getenv, PRBody: prBody, KeepGoing: b.keepGoing,
		Connect: func() (func(context.Context) (*lock.Lock, error), error) {
			return connect(cmd, &b.ro, src, images, old, registry.Refresh, getenv)
		},
	})
	if err != nil {
		return err
	}
	for _, w := range bump.WrittenPins(images) {
		fmt.Fprintf(cmd.ErrOrStderr(), "stowage: %s\n", escape.Line(w))
	}
	if err := printBump(cmd, b, res.Report, len(res.Changes), src.LockPath, res.Entries); err != nil {
		return err
	}
	if res.Err != nil {
		return res.Err
	}
	if b.exitCode && res.Changed() {
		return errCheckFailed
	}
	return nil
}

// printBump prints what bump changed (changes entries): the report as
// -o asks, the pull request's title alone (text with --pr-body, which holds
// the body), or on stderr that every digest of the lock at path (entries
// of them) is current.
func printBump(cmd *cobra.Command, b *bumpOptions, report v1alpha1.BumpReport, changes int, path string, entries int) error {
	switch {
	case b.format != "text":
		return printer.Print(cmd.OutOrStdout(), b.format, report)
	case changes == 0:
		fmt.Fprintf(cmd.ErrOrStderr(), "stowage: every digest in %s is current (%s)\n", path, words.Count(entries, "image"))
	case b.prBody != "":
		fmt.Fprintln(cmd.OutOrStdout(), report.Title)
	default:
		return printer.Print(cmd.OutOrStdout(), "text", report)
	}
	return nil
}
