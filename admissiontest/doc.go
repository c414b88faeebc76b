// Package admissiontest checks the admission policies stowage renders
// (internal/admission, `profiles.NAME.policy`) with the code of the
// projects that run them, at pinned versions: every Kyverno ClusterPolicy
// is decoded strictly into kyverno's own kyverno.io/v1 types and passed
// through their Validate; every Kyverno ImageValidatingPolicy
// (policies.kyverno.io/v1) decoded strictly into Kyverno's own types
// (github.com/kyverno/api at the version kyverno v1.19.1 requires) and
// checked for what those say (Kyverno's own check, compiling its CEL,
// needs the whole engine and is not imported); every sigstore policy-controller
// ClusterImagePolicy (v1beta1) and TrustRoot (v1alpha1) into
// policy-controller's types and their Validate; every CRI-O
// containers-policy.json fragment through containers-image's own policy
// parser (signature.NewPolicyFromBytes). The tests render a table of
// inputs directly, a config through the real stowage binary, and every
// golden file under ../golden; and they exercise the verification the
// policies describe: images signed with the real cosign's key and keyless
// (sigstore-go's virtual sigstore) on a docker-registry on 127.0.0.1 are
// locked and mirrored to a site prefix, and for each site reference render
// writes, the rule that Kyverno's and policy-controller's own matchers
// select gives the key or trusted root that `cosign verify` (offline) then
// checks the site copy with; containers-image's PolicyContext evaluates
// the CRI-O fragment against the key-signed copies.
//
// It is a module of its own (github.com/stowage/stowage/admissiontest,
// with a replace to the main module) so that stowage never depends on
// kyverno, policy-controller or containers-image: kyverno's API package
// alone pulls in about 1,800 packages, a cold compile of 14 CPU minutes
// (31 minutes on 2 busy cores). `make admission` runs it (with the build tag
// containers_image_openpgp, so that containers-image needs no cgo);
// `make test` runs it only when STOWAGE_REQUIRE_ADMISSION is set, as in
// .ci/run. The signing test needs docker-registry and cosign (skipped with
// one line without them, unless STOWAGE_REQUIRE_REGISTRY or
// STOWAGE_REQUIRE_COSIGN is set).
package admissiontest
