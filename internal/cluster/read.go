// Package cluster reads from a Kubernetes API server what stowage status
// compares with a rendered profile: every node, the profile's DaemonSets,
// the pods they select, the pod events of their namespaces and, where the
// credentials may, the kubelets' image GC thresholds. Config
// loads the client configuration (kubeconfig, context, the pod's
// ServiceAccount); Check reads, evaluates and, with a wait, reads again
// until the profile is ready.
//
// The API server may be hostile or broken, so every read is bounded: one
// answer's body (MaxResponseBytes), the redirects followed per request
// (MaxRedirects, and only to the same scheme, host and port), the objects
// per list page (PageSize), the pages per list (MaxPages, then a note) and
// the objects per run (MaxItems). Every credential of the client
// configuration is scrubbed, in each spelling internal/secret knows, from
// the errors, the API server's warnings (Warnings) and client-go's own log
// lines (RouteKlog).
//
// It only reads (get and list) and never reads a Secret. What the objects
// mean is internal/status's business: Read returns a status.Cluster for
// status.Evaluate.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"

	"github.com/stowage/stowage/internal/secret"
	"github.com/stowage/stowage/internal/status"
)

// Bounds of the cluster reads: objects per list request, list pages per
// kind before the read stops and says so, and objects per run (all lists
// together) before it fails. A page holding more objects than asked for,
// or a continue token given twice, fails the read too.
const (
	PageSize = 500
	MaxPages = 100
	MaxItems = 200_000
)

// Read reads what status.Evaluate needs for exp from the API server of rc:
// every node, each rendered DaemonSet of exp (absent ones are left out of
// the result), the pods each selects, and the pod events of their
// namespaces. Lists are paged; a list longer than MaxPages pages, or
// events the credentials may not read, are noted in Cluster.Notes rather
// than failed.
//
// ctx bounds the whole reading (stowage status's --deadline); timeout is
// rc's limit of each request (--timeout), named when a request reaches
// it. Errors name the API server and what failed, and are scrubbed of the
// credentials in secrets (AddConfigSecrets adds rc's).
func Read(ctx context.Context, rc *rest.Config, exp *status.Expected, secrets *secret.Set, timeout time.Duration) (*status.Cluster, error) {
	return read(ctx, rc, exp, secrets, timeout, newKubeletConfigs())
}

// read is Read with the kubelet configurations seen in the run's earlier
// readings (Check keeps one for all of them), to which it adds.
func read(ctx context.Context, rc *rest.Config, exp *status.Expected, secrets *secret.Set, timeout time.Duration, seen *kubeletConfigs) (*status.Cluster, error) {
	kc, err := newKubeClient(rc, secrets)
	if err != nil {
		return nil, err
	}
	c := &status.Cluster{DaemonSets: map[string]*appsv1.DaemonSet{}}
	host := rc.Host
	fail := func(what string, err error) error { return clusterError(ctx, timeout, host, what, err) }

	budget := MaxItems
	note, err := pages(ctx, "nodes", &budget, func(opts metav1.ListOptions) (string, int, error) {
		l := &corev1.NodeList{}
		if err := kc.list(ctx, kc.core, "", "nodes", opts, l); err != nil {
			return "", 0, err
		}
		c.Nodes = append(c.Nodes, l.Items...)
		return l.Continue, len(l.Items), nil
	}, metav1.ListOptions{})
	if err != nil {
		return nil, fail("listing nodes", err)
	}
	c.Notes = appendNote(c.Notes, note)

	namespaces, err := readDaemonSets(ctx, kc, exp, c, &budget, fail)
	if err != nil {
		return nil, err
	}
	for _, ns := range namespaces {
		note, err := pages(ctx, "pod events in namespace "+ns, &budget, func(opts metav1.ListOptions) (string, int, error) {
			l := &corev1.EventList{}
			if err := kc.list(ctx, kc.core, ns, "events", opts, l); err != nil {
				return "", 0, err
			}
			c.Events = append(c.Events, l.Items...)
			return l.Continue, len(l.Items), nil
		}, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.kind", "Pod").String()})
		if apierrors.IsForbidden(err) {
			c.Notes = append(c.Notes, fmt.Sprintf("events in namespace %s are not readable with these credentials: reasons come from container statuses only", ns))
			continue
		}
		if err != nil {
			return nil, fail("listing the events in namespace "+ns, err)
		}
		c.Notes = appendNote(c.Notes, note)
	}
	c.ImageGCHighThreshold = readImageGC(ctx, kc, exp, c.Nodes, seen)
	c.Now = time.Now()
	return c, nil
}

// readDaemonSets reads each DaemonSet of exp that is in the cluster into
// c.DaemonSets and the pods it selects into c.Pods, and returns the
// namespaces of those DaemonSets in the order first met.
func readDaemonSets(ctx context.Context, kc *kubeClient, exp *status.Expected, c *status.Cluster, budget *int, fail func(string, error) error) ([]string, error) {
	var namespaces []string
	for _, ds := range exp.DaemonSets {
		live, err := kc.daemonSet(ctx, ds.Namespace, ds.Name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fail(fmt.Sprintf("reading DaemonSet %s/%s", ds.Namespace, ds.Name), err)
		}
		c.DaemonSets[ds.Namespace+"/"+ds.Name] = live
		if !slices.Contains(namespaces, ds.Namespace) {
			namespaces = append(namespaces, ds.Namespace)
		}
		sel, err := metav1.LabelSelectorAsSelector(live.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("DaemonSet %s/%s: selector: %w", ds.Namespace, ds.Name, err)
		}
		note, err := pages(ctx, "pods of DaemonSet "+ds.Namespace+"/"+ds.Name, budget, func(opts metav1.ListOptions) (string, int, error) {
			l := &corev1.PodList{}
			if err := kc.list(ctx, kc.core, ds.Namespace, "pods", opts, l); err != nil {
				return "", 0, err
			}
			c.Pods = append(c.Pods, l.Items...)
			return l.Continue, len(l.Items), nil
		}, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return nil, fail(fmt.Sprintf("listing the pods of DaemonSet %s/%s", ds.Namespace, ds.Name), err)
		}
		c.Notes = appendNote(c.Notes, note)
	}
	return namespaces, nil
}

// pages calls list with Limit and Continue until the last page, or until
// MaxPages pages, when it returns a note saying the list was cut. list
// returns the continue token and the number of objects of its page; a
// page of more than PageSize objects, a continue token given twice, or
// more objects than budget has left (budget is the run's, shared by every
// list and decremented) fail the read.
func pages(ctx context.Context, what string, budget *int, list func(metav1.ListOptions) (string, int, error), opts metav1.ListOptions) (string, error) {
	opts.Limit = PageSize
	seen := map[string]bool{}
	for range MaxPages {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		next, n, err := list(opts)
		if err != nil {
			return "", err
		}
		if n > PageSize {
			return "", fmt.Errorf("the API server returned %d %s in one page, more than the %d asked for", n, what, PageSize)
		}
		if *budget -= n; *budget < 0 {
			return "", fmt.Errorf("more than %d objects read from the API server in one run (at %s), the bound of stowage status", MaxItems, what)
		}
		if next == "" {
			return "", nil
		}
		if seen[next] {
			return "", fmt.Errorf("the API server gave the same continue token twice for %s", what)
		}
		seen[next] = true
		opts.Continue = next
	}
	return fmt.Sprintf("%s: read only the first %d (a list longer than %d pages is cut)", what, PageSize*MaxPages, MaxPages), nil
}

// appendNote appends n to notes unless it is empty.
func appendNote(notes []string, n string) []string {
	if n == "" {
		return notes
	}
	return append(notes, n)
}

// clusterError names the API server and what failed; a timeout says
// which limit was reached: the reading's (ctx, --deadline) or one
// request's (timeout, --timeout).
func clusterError(ctx context.Context, timeout time.Duration, host, what string, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fmt.Errorf("%s on %s: --deadline reached: %w", what, host, err)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("%s on %s: the request got no answer within --timeout %s (the limit of each request to the API server): %w", what, host, timeout, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s on %s: forbidden; status needs get and list on DaemonSets, Pods, Nodes and Events (examples/status/rbac.yaml): %w", what, host, err)
	default:
		return fmt.Errorf("%s on %s: %w", what, host, err)
	}
}
