//go:build !stowagefront

package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/stowage/stowage/api/v1alpha1"
	"github.com/stowage/stowage/internal/cluster"
	"github.com/stowage/stowage/internal/printer"
	"github.com/stowage/stowage/internal/secret"
	"github.com/stowage/stowage/internal/status"
	"github.com/stowage/stowage/internal/version"
)

// statusOptions are the flags of stowage status.
type statusOptions struct {
	loadOptions
	kubeconfig, context, output string
	timeout, deadline, wait     time.Duration
}

func newStatus(getenv env) *cobra.Command {
	var o statusOptions
	o.loadOptions.deadline = &o.deadline
	c := &cobra.Command{
		Use:   "status [DIR]",
		Short: "Show which images of a profile are on which node of the current cluster; exit 0 only when all are",
		Long: `Render the profile of the config in DIR (default .) without reading any
password, then read the cluster of the current kubeconfig context (or
--kubeconfig, --context; in a pod, its ServiceAccount): the profile's
DaemonSets, their pods, the nodes and the pods' events. Only get and list;
no Secret is read.

For every image and every node it says present (the locked digest is on the
node: a container's imageID or the node's status.images), pulling, failed
(with the kubelet's reason and message) or not scheduled (nodeSelector,
affinity or an untolerated taint keep the DaemonSet off the node), then
each DaemonSet's rollout and a summary per image (state success, failure or
pulling; message; digest; nodes), the disk budget per node pool (each
node's bytes of the images its DaemonSets pull, by the lock's sizes, against
its ephemeral-storage capacity times its kubelet's image GC high threshold,
read through nodes/proxy where allowed, else the default 85% assumed), and
notes when a source is incomplete.

A DaemonSet whose generation the DaemonSet controller has not observed yet
(status.observedGeneration behind metadata.generation, as right after an
apply) is not ready, and nor are its images, even where it seems to target no
node: status cannot pass before the controller has placed the pods.

--wait DURATION reads the cluster again every 5s until every image is present
on every targeted node, or DURATION has passed; the report is the last
reading. Each reading is bounded by --deadline, so a run lasts at most
DURATION plus --deadline.

Exit 0 when every image is present on every node its DaemonSets target,
1 otherwise or when the cluster cannot be read, 2 on a usage error: a CI
gate, an Argo CD PostSync hook or a Flux health check (examples/status/).

-o json or -o yaml prints the report: ` + printer.MustKeys(v1alpha1.StatusReport{}) + `.` + kustomizationHelp,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.output = formatAlias(o.output)
			if err := printer.Check("-o", o.output); err != nil {
				return usageError{err}
			}
			if o.timeout <= 0 || o.deadline <= 0 {
				return usageError{fmt.Errorf("--timeout and --deadline must be positive")}
			}
			if o.wait < 0 {
				return usageError{fmt.Errorf("--wait must not be negative")}
			}
			dir := dirArg(args)
			src, err := loadSource(cmd.Context(), cmd.ErrOrStderr(), dir, o.loadOptions)
			if err != nil {
				return err
			}
			exp, err := status.ExpectSource(dir, src, o.profile)
			if err != nil {
				return err
			}
			// Every credential of the kubeconfig is scrubbed from what
			// status shows: errors, the report, the API server's warnings
			// and client-go's own log lines (routed here from klog).
			secrets := &secret.Set{}
			cluster.RouteKlog(cmd.ErrOrStderr(), secrets)
			rc, err := cluster.Config(cluster.ConfigOptions{
				Kubeconfig: o.kubeconfig, Context: o.context, Getenv: getenv,
				Timeout: o.timeout, UserAgent: version.Get().UserAgent() + " (status)",
			})
			if err != nil {
				return err
			}
			cluster.AddConfigSecrets(secrets, rc)
			rc.WarningHandler = cluster.NewWarnings(cmd.ErrOrStderr(), rc.Host, secrets)
			rep, err := cluster.Check(cmd.Context(), rc, exp, secrets, cluster.CheckOptions{
				Timeout: o.timeout, Deadline: o.deadline, Wait: o.wait,
				Waiting: func(rep *status.Report, left time.Duration) {
					fmt.Fprintf(cmd.ErrOrStderr(), "stowage: waiting, %s left: %s\n", left.Round(time.Second), status.Pending(rep))
				},
			})
			if err != nil {
				return err
			}
			if err := printer.Print(cmd.OutOrStdout(), o.output, status.Printable{Report: rep}); err != nil {
				return err
			}
			if !rep.Ready {
				return errCheckFailed
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVarP(&o.profile, "profile", "p", "", "profile to check (optional when the config has one)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, then ~/.kube/config, then the pod's ServiceAccount)")
	f.StringVar(&o.context, "context", "", "kubeconfig context (default its current-context)")
	f.StringVarP(&o.output, "output", "o", "text", "text, json or yaml: "+printer.MustKeys(v1alpha1.StatusReport{}))
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "limit of each request to the API server")
	f.DurationVar(&o.deadline, "deadline", 2*time.Minute, "limit of the whole run (with --wait, of each reading)")
	f.DurationVar(&o.wait, "wait", 0, "read the cluster again every 5s until every image is present on every targeted node, for at most this long (0: read once)")
	f.BoolVar(&o.allowLiteralPasswords, "allow-literal-passwords", false, "accept auth.password values that are not env: or file: sources")
	o.addRootFlag(f)
	return c
}
