// Package e2e holds stowage's end-to-end tests against a real Kubernetes API
// server: kube-apiserver v1.37.2 and etcd, started by controller-runtime's
// envtest from the binaries in $KUBEBUILDER_ASSETS (built by
// hack/kube-apiserver/build.sh; .ci/run sets the variable).
//
// The tests apply what stowage renders with server-side apply, read every
// object back and compare it with the rendered one, and check that a digest
// bump changes only the DaemonSets that pull the image; and they run the real
// `stowage status` binary against nodes and DaemonSet pods whose statuses
// the test writes through the status subresource. Without the binaries
// they skip, unless STOWAGE_REQUIRE_APISERVER is set (CI sets it): then they
// fail.
//
// This is a module of its own (github.com/stowage/stowage/e2e, with a replace
// to the main module) so that stowage never depends on controller-runtime
// (stowage status uses client-go's typed clients only); `make test` runs it after the main module's tests.
package e2e
