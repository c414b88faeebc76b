package cluster

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/stowage/stowage/internal/status"
)

// Bounds of the kubelet configurations status reads for the disk budget:
// nodes asked per reading, and failures in a row (unreachable kubelets)
// after which it stops asking.
const (
	MaxKubeletConfigs  = 100
	MaxKubeletFailures = 3
)

// kubeletConfigs holds, for one run of stowage status (every reading of a
// --wait), what the kubelets' configz said: each node's is read at most
// once per run once it answered, and a refusal of nodes/proxy stops the
// asking for the rest of the run (the credentials do not change). A
// request that failed otherwise (a kubelet not answering yet, as on a node
// that just joined) is not kept: the next reading asks that node again.
type kubeletConfigs struct {
	// answered holds the threshold of each node whose kubelet answered,
	// -1 for an answer without a usable imageGCHighThresholdPercent.
	answered map[string]int
	// refused is set once the API server refused nodes/proxy.
	refused bool
}

// newKubeletConfigs returns an empty kubeletConfigs, for one run.
func newKubeletConfigs() *kubeletConfigs { return &kubeletConfigs{answered: map[string]int{}} }

// readImageGC reads, through the API server's nodes/NAME/proxy/configz,
// the imageGCHighThresholdPercent of the kubelets of the nodes a pool of
// exp selects, at most MaxKubeletConfigs new ones per reading, and returns
// those known (by node name). Nodes whose kubelet answered in an earlier
// reading of the run (seen) are not asked again. It never fails the
// reading: a refusal (nodes/proxy is not in examples/status/rbac.yaml)
// stops it at the first node and for the rest of the run,
// MaxKubeletFailures other failures in a row (no kubelet answering, as on
// an API server without nodes) or the end of ctx stop this reading's
// asking, and an answer without the field or with a value outside 1..100
// is left out; status then assumes the kubelet's default and says so.
func readImageGC(ctx context.Context, kc *kubeClient, exp *status.Expected, nodes []corev1.Node, seen *kubeletConfigs) map[string]int {
	out := map[string]int{}
	asked, failed := 0, 0
	for i := range nodes {
		n := &nodes[i]
		if !inPool(exp, n) {
			continue
		}
		if p, ok := seen.answered[n.Name]; ok {
			if p > 0 {
				out[n.Name] = p
			}
			continue
		}
		if seen.refused || asked >= MaxKubeletConfigs || failed >= MaxKubeletFailures || ctx.Err() != nil {
			continue
		}
		asked++
		raw, err := kc.core.Get().Resource("nodes").Name(n.Name).SubResource("proxy", "configz").DoRaw(ctx)
		if apierrors.IsForbidden(err) {
			seen.refused = true
			continue
		}
		if err != nil {
			failed++
			continue
		}
		failed = 0
		seen.answered[n.Name] = -1
		var cz struct {
			KubeletConfig *struct {
				ImageGCHighThresholdPercent *int64 `json:"imageGCHighThresholdPercent"`
			} `json:"kubeletconfig"`
		}
		if json.Unmarshal(raw, &cz) != nil || cz.KubeletConfig == nil || cz.KubeletConfig.ImageGCHighThresholdPercent == nil {
			continue
		}
		if p := *cz.KubeletConfig.ImageGCHighThresholdPercent; p >= 1 && p <= 100 {
			out[n.Name] = int(p)
			seen.answered[n.Name] = int(p)
		}
	}
	return out
}

// inPool reports whether a pool of exp selects n.
func inPool(exp *status.Expected, n *corev1.Node) bool {
	for _, p := range exp.Pools {
		ok := true
		for k, v := range p.Selector {
			if w, has := n.Labels[k]; !has || w != v {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
