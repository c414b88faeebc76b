package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ConfigOptions say which client configuration Config loads and how it
// sends requests.
type ConfigOptions struct {
	// Kubeconfig is an explicit kubeconfig file (stowage status's
	// --kubeconfig); "" searches $KUBECONFIG, ~/.kube/config, then the
	// pod's ServiceAccount.
	Kubeconfig string
	// Context is the kubeconfig context to use; "" is its current-context.
	Context string
	// Getenv reads $KUBECONFIG; nil reads no environment.
	Getenv func(string) (string, bool)
	// Timeout bounds each request (--timeout).
	Timeout time.Duration
	// UserAgent is sent with every request.
	UserAgent string
}

// Config loads the client configuration: o.Kubeconfig, else the files of
// $KUBECONFIG, else ~/.kube/config, else the pod's ServiceAccount
// (clientcmd's in-cluster fallback); o.Context picks the context. Every
// request is bounded by o.Timeout and sends o.UserAgent. The result is a
// copy the caller may change (Read adds its own transport rules to a copy
// of it in turn).
//
// The error, when there is no cluster to read, says so and what to pass:
// the explicit file that failed, or that there is no kubeconfig and no pod.
func Config(o ConfigOptions) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.Precedence = []string{clientcmd.RecommendedHomeFile}
	if o.Getenv != nil {
		if v, ok := o.Getenv(clientcmd.RecommendedConfigPathEnvVar); ok && v != "" {
			rules.Precedence = filepath.SplitList(v)
		}
	}
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	switch {
	case err != nil && o.Kubeconfig != "":
		return nil, fmt.Errorf("no cluster to read: --kubeconfig %s: %w", o.Kubeconfig, unwrapPathErr(err))
	case clientcmd.IsEmptyConfig(err):
		// client-go's own wording suggests KUBERNETES_MASTER, which
		// nothing reads any more.
		return nil, errors.New("no cluster to read: no kubeconfig ($KUBECONFIG or ~/.kube/config) and not in a pod: pass --kubeconfig, set KUBECONFIG, or run in a pod")
	case err != nil:
		return nil, fmt.Errorf("no cluster to read: %w (pass --kubeconfig, set KUBECONFIG, or run in a pod)", err)
	}
	rc = rest.CopyConfig(rc)
	rc.Timeout = o.Timeout
	rc.UserAgent = o.UserAgent
	return rc, nil
}

// unwrapPathErr drops the "stat PATH:" of a path error, for messages that
// name the path already.
func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
