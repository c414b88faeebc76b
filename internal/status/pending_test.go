package status

import "testing"

// TestPending: the line --wait prints counts the images present on every
// targeted node and names the DaemonSets not applied or not yet observed.
func TestPending(t *testing.T) {
	t.Parallel()
	r := &Report{
		Images: []ImageStatus{{State: Success}, {State: InProgress}, {State: Failure}},
		DaemonSets: []Rollout{
			{Namespace: "ns", Name: "a", InCluster: true, Observed: true},
			{Namespace: "ns", Name: "b"},
			{Namespace: "kube-system", Name: "c", InCluster: true},
		},
	}
	want := "1 of 3 images present on every targeted node; DaemonSet ns/b not in the cluster, kube-system/c not yet observed"
	if got := Pending(r); got != want {
		t.Errorf("Pending:\n got %s\nwant %s", got, want)
	}
	if got, want := Pending(&Report{}), "0 of 0 images present on every targeted node"; got != want {
		t.Errorf("empty report: %s, want %s", got, want)
	}
}
