//go:build !stowagefront

package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/plan"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/registry"
	"github.com/stowage/stowage/internal/source"
	"github.com/stowage/stowage/internal/vet"
)

func newVet(getenv env) *cobra.Command {
	var (
		o      loadOptions
		ro     registryOptions
		remote bool
		onSite bool
		format string
	)
	o.deadline = &ro.runTimeout
	c := &cobra.Command{
		Use:   "vet [DIR]",
		Short: "Check the config in DIR (default .) and that the lock covers every image of every profile",
		Long: `Load and validate the config, then render every profile (or --profile) against
the lock without writing anything. Passwords are not read: vet needs no secrets,
but it refuses what render would: an env: variable unset or empty, a file:
source outside DIR, missing, not a regular file or empty (stat, not read).

With --remote, also check with one HEAD each that every digest the rendered
manifests pin still exists in its registry, and name each one that does not.
Passwords of the config's credentials are read then.

With --site, check on the site registry instead (each profile's site, and the
site the KRM function rewrites pinned workloads to): every reference the
rendered output names (DaemonSets, images.list, the OpenPAI lists, the
workloads the function pins) must exist at its site repository with its
pinned digest, and so must every child of a pinned index the lock records
(each node pulls its own platform); each one missing is named, exit 1. The
site registry is contacted with the credentials the rendered pull Secrets
carry to it, else the Docker config. --remote and --site are separate
questions asked on the two sides of an air gap (the source registries are
out of reach on the site, the site from the connected side), so neither
implies the other; give both where both are reachable.

On success vet prints one line per profile (its pre-pulled images and the
pull Secrets the user must create) and one for the checks across profiles;
with -v also the Secrets to create and who may use each pre-pulled image
offline under the kubelet's rule.

Each profile's disk budget: per node pool (the nodes a nodeSelector of its
pullers picks), the bytes its images take by the lock's sizes, against the
pool's nodeDisk when the config declares one. A warning on stderr says when
they do not fit below the kubelet's image GC high threshold (or may not:
the lock has no size for some); -v prints every pool, -o json lists them
all (diskBudget). docs/new-nodes.md, "Will it fit?". A puller's startup taint
with effect NoExecute gets a warning on stderr: it evicts the pods on a new
node that do not tolerate it (docs/new-nodes.md).

-o json or -o yaml prints the report, on
stdout also when vet fails: ` + printer.MustKeys(v1alpha1.VetReport{}) + `.` + kustomizationHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if err := printer.Check("-o", format); err != nil {
				return usageError{err}
			}
			rep := v1alpha1.NewVetReport()
			rep.Verbose = cmd.Flag("verbose").Value.String() == "true"
			defer func() {
				if !isUsage(err) && (err == nil || format != "text") {
					vet.Finish(rep, err)
					if perr := printer.Print(cmd.OutOrStdout(), format, rep); perr != nil && err == nil {
						err = perr
					}
				}
			}()
			if err := checkDirArg(cmd, args); err != nil {
				return err
			}
			src, err := loadSource(cmd.Context(), cmd.ErrOrStderr(), dirArg(args), o)
			if err != nil {
				return err
			}
			exe, _ := os.Executable()
			return vet.Run(cmd.Context(), src, vet.Options{Profile: o.profile, Remote: remote, Site: onSite, Getenv: getenv,
				Executable: exe, Schema: schemaOptions(cmd.Context()), InputSize: source.FunctionInputSize, Warnings: cmd.ErrOrStderr(), EveryPool: rep.Verbose && format == "text",
				Connect: func(images []*plan.Image) (*registry.Resolver, func(), error) {
					ro.stdin = cmd.InOrStdin()
					return ro.resolver(cmd.ErrOrStderr(), src.Passwords(), images, getenv)
				}}, rep)
		},
	}
	c.Flags().BoolVar(&remote, "remote", false, "also check that every pinned digest still exists in its registry")
	c.Flags().BoolVar(&onSite, "site", false, "also check that the site registry holds every pinned reference the rendered output names, index children included")
	c.Flags().StringVarP(&format, "output", "o", "text", "text, json or yaml: "+printer.MustKeys(v1alpha1.VetReport{})+" on stdout, also when vet fails")
	ro.addFlags(c.Flags())
	c.Flags().StringVarP(&o.profile, "profile", "p", "", "vet only this profile")
	c.Flags().BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	o.addRootFlag(c.Flags())
	return c
}
