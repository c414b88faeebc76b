//go:build !stowagefront

package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/bump"
	"github.com/stowage/stowage/internal/escape"
	"github.com/stowage/stowage/internal/lock"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/verifypolicy"
)

// lockInputs loads what lock and bump start from (source.LockInputs): the
// source, its images and the old lock with its bytes. With warn set (the
// lock command) the lock entries that do not validate are dropped, saying
// so on warn, so that lock resolves them again instead of refusing the
// file. Once the source is read it is returned also with an error, so
// that a report can name the lock file.
func lockInputs(ctx context.Context, stderr io.Writer, dir string, o loadOptions, warn io.Writer) (*source.Source, []*plan.Image, *lock.Lock, []byte, error) {
	src, err := loadSource(ctx, stderr, dir, o)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var repair func(error)
	if warn != nil {
		repair = src.LockRepair(warn)
	}
	images, lf, err := src.LockInputs(repair)
	if err != nil {
		return src, nil, nil, nil, err
	}
	return src, images, lf.Lock, lf.Data, nil
}

// connect is lock's and bump's Connect (bump.LockInput, bump.Input): the
// registry client of ro for src's images, and the resolve that runs mode
// from old and checks the pins under the verify policies (verifypolicy.PinWarn).
func connect(cmd *cobra.Command, ro *registryOptions, src *source.Source, images []*plan.Image, old *lock.Lock, mode registry.Mode, getenv env) (func(context.Context) (*lock.Lock, error), error) {
	ro.stdin = cmd.InOrStdin()
	r, done, err := ro.resolver(cmd.ErrOrStderr(), src.Passwords(), images, getenv)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (*lock.Lock, error) {
		next, lockErr := r.Lock(ctx, old, images, mode)
		done()
		return verifypolicy.PinWarn(ctx, cmd.ErrOrStderr(), r, src.Config, old, next, images, lockErr)
	}, nil
}

// lockOptions are the flags of stowage lock.
type lockOptions struct {
	o       loadOptions
	ro      registryOptions
	check   bool
	viaSite bool
	format  string
}

func newLock(getenv env) *cobra.Command {
	lo := &lockOptions{}
	lo.o.deadline = &lo.ro.runTimeout
	c := &cobra.Command{
		Use:   "lock [DIR]",
		Short: "Resolve the images DIR's config (default .) uses that DIR/stowage.lock.yaml lacks",
		Long: `Bring DIR/stowage.lock.yaml in line with the config: resolve every image that has
no entry yet (one GET of its manifest; an index's children once more each), keep
the entries already there without contacting a registry, and remove the entries
no profile uses. A reference with a digest written in it is a user pin: checked
to exist, recorded, never re-resolved. The file is replaced atomically. When
images fail, the lock keeps what this run learned (every entry that resolved) and
lock exits 1 naming each failure with the registry's answer, and says whether
running it again can resolve them (the network, a timeout, 429 or a 5xx may
pass by itself; a 401, a 404 or a bad signature needs a change first; render
refuses an image the lock lacks, by name).

With -o json or -o yaml, stdout holds the report, also when lock fails:
` + printer.MustKeys(v1alpha1.LockReport{}) + `. changes lists each entry
added, removed or changed as bump -o json does; failures each image that did
not resolve ` + printer.MustKeys(v1alpha1.LockFailure{}) + `; stale what
--check found ` + printer.MustKeys(v1alpha1.StaleEntry{}) + ` (status
missing, unused, changed, unverified, unrecorded or format); errors every
other problem ` + printer.MustKeys(v1alpha1.ReportError{}) + `. Messages
still go to stderr.

With --check, nothing is resolved or written: exit 1, listing the entries, when
the lock would change (entries missing, unused or out of date, or without a
signer a required verify policy trusts).

With --via-site, every image is read at the config's site registry (its site
field, mapped by the rule render uses), for example on the site once stowage
mirror filled it; the lock keeps the original names, so it is the same lock the
connected side writes. --mirror REGISTRY=HOST[:PORT][/PATH] is the same
vocabulary for one registry, as in site.registries.` + kustomizationHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runLock(cmd, args, lo, getenv) },
	}
	c.Flags().BoolVar(&lo.check, "check", false, "only report whether the lock would change; exit 1 if so")
	c.Flags().StringVarP(&lo.format, "output", "o", "text", "text, json or yaml: "+printer.MustKeys(v1alpha1.LockReport{})+" on stdout, also when lock fails")
	c.Flags().BoolVar(&lo.viaSite, "via-site", false, "read every image at the config's site registry (its site field); the lock keeps the original names")
	c.Flags().BoolVar(&lo.o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	lo.o.addRootFlag(c.Flags())
	lo.ro.addFlags(c.Flags())
	return c
}

// runLock is stowage lock on DIR: bump.Lock's run (the images the lock
// lacks resolved, the file written with what was learned, also when some
// failed), or with --check only the comparison (verifypolicy.CheckLock). With -o json or
// yaml the report is written on stdout whatever the outcome.
func runLock(cmd *cobra.Command, args []string, lo *lockOptions, getenv env) (err error) {
	if err := printer.Check("-o", lo.format); err != nil {
		return usageError{err}
	}
	rep := v1alpha1.NewLockReport()
	if lo.format != "text" {
		defer func() {
			if !isUsage(err) {
				bump.FinishLock(rep, err, errors.Is(err, errCheckFailed))
				if perr := printer.Print(cmd.OutOrStdout(), lo.format, rep); perr != nil && err == nil {
					err = perr
				}
			}
		}()
	}
	if err := checkDirArg(cmd, args); err != nil {
		return err
	}
	var warn io.Writer
	if !lo.check {
		warn = cmd.ErrOrStderr()
	}
	src, images, old, data, err := lockInputs(cmd.Context(), cmd.ErrOrStderr(), dirArg(args), lo.o, warn)
	if src != nil {
		// Once the config is read the lock file is known, also when
		// the config's images or the file itself are refused.
		rep.Lock = src.LockPath
	}
	if err != nil {
		return err
	}
	rep.Entries = len(old.Entries)
	if lo.check {
		if rep.Stale, err = verifypolicy.CheckLock(src.Config, old, data, images); err != nil || len(rep.Stale) == 0 {
			rep.Stale = []v1alpha1.StaleEntry{}
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "stowage: %s is out of date; run `stowage lock` and commit the result:\n", src.LockPath)
		for _, s := range rep.Stale {
			fmt.Fprintf(cmd.ErrOrStderr(), "  %s\n", escape.Line(s.String()))
		}
		return errCheckFailed
	}
	summary, err := bump.Lock(cmd.Context(), bump.LockInput{Source: src, Images: images, Old: old, OldData: data,
		Connect: func() (func(context.Context) (*lock.Lock, error), error) {
			if lo.viaSite {
				m, err := plan.SiteMapping(src.Config)
				if err != nil {
					return nil, fmt.Errorf("--via-site: %w; give the mapping with --mirror instead", err)
				}
				lo.ro.site = &m
			}
			return connect(cmd, &lo.ro, src, images, old, registry.Fill, getenv)
		}}, rep)
	// The summary says what the file now holds: after a failure only
	// when the run changed it.
	if lo.format == "text" && summary != "" {
		fmt.Fprintln(cmd.OutOrStdout(), summary)
	}
	return err
}
