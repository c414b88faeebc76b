package status

import (
	"fmt"
	"strings"
)

// Pending says in one line what keeps r from being ready: how many images
// are present on every targeted node, and the DaemonSets not in the
// cluster or not yet observed by their controller. stowage status --wait
// prints it with each reading that is not ready.
func Pending(r *Report) string {
	ok := 0
	for _, im := range r.Images {
		if im.State == Success {
			ok++
		}
	}
	s := fmt.Sprintf("%d of %d images present on every targeted node", ok, len(r.Images))
	var pending []string
	for _, d := range r.DaemonSets {
		switch {
		case !d.InCluster:
			pending = append(pending, d.Namespace+"/"+d.Name+" not in the cluster")
		case !d.Observed:
			pending = append(pending, d.Namespace+"/"+d.Name+" not yet observed")
		}
	}
	if len(pending) > 0 {
		s += "; DaemonSet " + strings.Join(pending, ", ")
	}
	return s
}
