package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/bump"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/output"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/render"
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
affected. -o json prints the same as JSON, with a branch name derived from the
change set (the same change always gets the same branch). --pr-body writes the
body to a file (not -: the body is on stdout already). With --render OUTDIR the profile (--profile) is rendered again
into OUTDIR, so the pull request carries the manifests too. --exit-code exits 1
when something changed, as git diff --exit-code does.` + kustomizationHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runBump(cmd, dirArg(args), b, getenv) },
	}
	c.Flags().StringVarP(&b.o.profile, "profile", "p", "", "profile --render renders (optional when the config has one)")
	c.Flags().StringVar(&b.prBody, "pr-body", "", "also write the pull request body (markdown) to this file")
	c.Flags().StringVarP(&b.format, "output", "o", "text", "text (title and body) or json (title, branch, body and changes)")
	c.Flags().BoolVar(&b.exitCode, "exit-code", false, "exit 1 when the lock (or the --render output) changed")
	c.Flags().BoolVar(&b.keepGoing, "keep-going", false, "when images fail, still bump the others (the failed keep their old entries) and exit 1 naming the failures")
	c.Flags().StringVar(&b.renderOut, "render", "", "also render the profile into this directory with the new digests")
	c.Flags().BoolVar(&b.o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	b.o.addRootFlag(c.Flags())
	b.ro.addFlags(c.Flags())
	return c
}

// runBump is stowage bump on dir: every tag resolved again, the lock, the
// --render directory and the --pr-body file written together or not at
// all, the pull request title and body printed.
func runBump(cmd *cobra.Command, dir string, b *bumpOptions, getenv env) error {
	o, format, prBody, renderOut := b.o, b.format, b.prBody, b.renderOut
	if err := checkFormat("-o", format, "text", "json"); err != nil {
		return err
	}
	if err := refuseStdout("--pr-body", prBody, "stdout carries the title and body already (or, with -o json, the report holding the body); give a file"); err != nil {
		return err
	}
	if err := refuseStdout("--render", renderOut, "--render is the directory the profile is rendered into; give a directory"); err != nil {
		return err
	}
	src, images, old, data, err := lockInputs(cmd.ErrOrStderr(), dir, o)
	if err != nil {
		return err
	}
	if err := src.OwnLock(); err != nil {
		return err
	}
	cfg, path := src.Config, src.LockPath
	if src.Kustomization != nil && renderOut != "" {
		return usageError{fmt.Errorf("--render is for a config directory; %s is a kustomization, which kustomize renders with the function", dir)}
	}
	// Every output against the config, the lock and each other,
	// before a registry is contacted.
	if err := output.CheckPaths(output.Paths{ConfigDir: dir, Lock: path, RenderDir: renderOut, RenderFlag: "--render", PRBody: prBody}); err != nil {
		return err
	}
	r, done, err := b.ro.resolver(cmd.ErrOrStderr(), src.Passwords(), images, getenv)
	if err != nil {
		return err
	}
	next, lockErr := r.Lock(cmd.Context(), old, images, registry.Refresh)
	done()
	next, lockErr = verifyPinned(cmd.Context(), cmd.ErrOrStderr(), r, cfg, old, next, images, lockErr)
	var failed registry.Errors
	if lockErr != nil && (!b.keepGoing || next == nil || !errors.As(lockErr, &failed)) {
		return fmt.Errorf("%s not changed: %w", path, lockErr)
	}
	changes := bump.Diff(old, next, images)
	out := next.Marshal()
	lockChanged := !bytes.Equal(out, data)

	// Render before writing anything, with the new lock, so that
	// a failed render leaves every file as it was.
	files, renderChanged, err := bumpRender(cfg, dir, o.profile, renderOut, next, getenv)
	if err != nil {
		return err
	}
	// The lock, the rendered directory and the PR body change
	// together or not at all (a failed or interrupted write puts
	// back the ones made before it).
	var ws output.Set
	if lockChanged {
		ws.File(path, out)
	}
	if renderChanged {
		ws.Dir(renderOut, files)
	}
	report := bump.NewReport(changes, bump.BodyOptions{LockFile: path, RenderDir: renderOut})
	if prBody != "" && report.Body != "" {
		ws.File(prBody, []byte(output.PRBodyMarker+report.Body))
	}
	if err := ws.Commit(cmd.Context()); err != nil {
		return err
	}
	printWrittenPins(cmd.ErrOrStderr(), images)
	if err := printBump(cmd, b, report, len(changes), path, len(next.Entries)); err != nil {
		return err
	}
	if lockErr != nil {
		return fmt.Errorf("--keep-going: %w\nthe other images were bumped; the failed ones keep their old entries in %s", lockErr, path)
	}
	if b.exitCode && (len(changes) > 0 || lockChanged || renderChanged) {
		return errCheckFailed
	}
	return nil
}

// bumpRender renders profile of cfg with the new lock next into the
// files of renderOut (none without --render) and says whether they
// differ from what renderOut holds.
func bumpRender(cfg *v1alpha1.Config, dir, profile, renderOut string, next *lock.Lock, getenv env) (map[string][]byte, bool, error) {
	if renderOut == "" {
		return nil, false, nil
	}
	objs, err := render.FromConfig(cfg, profile, next, render.Options{Dir: dir, Getenv: getenv})
	if err != nil {
		return nil, false, fmt.Errorf("--render %s: %w", renderOut, err)
	}
	files, err := render.Files(objs)
	if err != nil {
		return nil, false, err
	}
	if err := output.CheckDir(renderOut); err != nil {
		return nil, false, fmt.Errorf("--render: %w", err)
	}
	diff, err := output.Diff(renderOut, files)
	if err != nil {
		return nil, false, err
	}
	return files, len(diff) > 0, nil
}

// printBump prints what bump changed (changes entries): the JSON report,
// the pull request's title (with --pr-body) or title and body, or on
// stderr that every digest of the lock at path (entries of them) is
// current.
func printBump(cmd *cobra.Command, b *bumpOptions, report bump.Report, changes int, path string, entries int) error {
	w := cmd.OutOrStdout()
	switch {
	case b.format == "json":
		return writeReport(w, report)
	case changes == 0:
		fmt.Fprintf(cmd.ErrOrStderr(), "stowage: every digest in %s is current (%d images)\n", path, entries)
	case b.prBody != "":
		fmt.Fprintln(w, report.Title)
	default:
		fmt.Fprintf(w, "%s\n\n%s", report.Title, report.Body)
	}
	return nil
}

// printWrittenPins names the images bump does not re-resolve because a
// digest written in the config pins them, when another spelling of the
// same image is written with a tag alone: that tag does not follow its
// registry either (a pin applies to every spelling of the image).
func printWrittenPins(w io.Writer, images []*plan.Image) {
	for _, img := range images {
		if img.Ref.Digest == "" {
			continue
		}
		for _, u := range img.Uses {
			if u.Ref.Digest == "" {
				fmt.Fprintf(w, "stowage: %s is not re-resolved: %s pins it by the digest written there, and that pin also holds %s (%s), written without one; remove the digest to let bump follow the tag\n",
					img.Key, img.Ref.Written, u.Ref.Written, u.UsedBy())
				break
			}
		}
	}
}
