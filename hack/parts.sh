#!/usr/bin/env bash
# The optional heavy parts of `make test`, checked without compiling
# anything, so that the Makefile decides before `go test` what runs:
#
#   hack/parts.sh PART...     PART: registry, kustomize, cosign, cold-rebuild, pprof, e2e, node, image-volume, admission, fuzz
#
# For each PART that is absent it prints ONE line on stdout: what is
# skipped, why, and how to get it. It exits 0 when every PART named is
# there, 3 when one is absent, and 1 when one is absent while its
# STOWAGE_REQUIRE_* variable is set (.ci/run sets them all): then the line
# goes to stderr as a failure. The tests keep their own skip (or failure)
# for runs of `go test` without make; the two say the same thing.
#
#   registry   Debian's docker-registry and apache2-utils' htpasswd, for the
#              tests against a real registry on 127.0.0.1 (cmd/stowage,
#              internal/registry); STOWAGE_REQUIRE_REGISTRY.
#   kustomize  the real kustomize v5.8.2 running stowage as an exec KRM
#              function (fn); STOWAGE_REQUIRE_KUSTOMIZE.
#   cosign     the real cosign v3.1.3 signing, attesting and verifying images
#              on docker-registry for the signature tests (internal/mirror,
#              internal/sigverify);
#              STOWAGE_REQUIRE_COSIGN.
#   cold-rebuild the helper image rebuilt from an empty build cache of its
#              own and compared byte for byte with the first build
#              (internal/helperimage TestReproducibleColdCache): nothing is
#              missing, but it compiles the standard library for
#              linux/amd64 and linux/arm64 from nothing, so it runs only
#              when STOWAGE_REQUIRE_COLD_REBUILD is set (.ci/run sets it);
#              the rebuild from the shared cache is compared regardless.
#   pprof      go tool pprof reading a CPU profile (hack/perf
#              TestFocusedSamples): nothing is missing, but Go 1.25 and later
#              build the tool from source on first use, about a CPU minute
#              from an empty build cache, so it runs only when
#              STOWAGE_REQUIRE_PPROF is set (.ci/run sets it); make bench
#              uses the same tool.
#   e2e        kube-apiserver and etcd in $KUBEBUILDER_ASSETS, for the e2e/
#              module (envtest); STOWAGE_REQUIRE_APISERVER.
#   node       everything node/parts.sh lists (root, the kubelet and the
#              other Kubernetes binaries, containerd, runc, CNI plugins,
#              etcd, docker-registry), for the real-node suite (node/);
#              STOWAGE_REQUIRE_NODE.
#   image-volume containerd 2 (hack/containerd/build.sh; node/parts.sh
#              image-volume), for the real-node suite's image-volume test
#              and TestNewNode's artifacts (without it the rest of TestNewNode
#              and of the suite runs on Debian's containerd);
#              STOWAGE_REQUIRE_IMAGE_VOLUME.
#   admission  the admissiontest/ module (make admission): the rendered
#              admission policies checked with Kyverno's, policy-controller's
#              and containers-image's own code; nothing is missing, but its
#              cold compile takes 14 CPU minutes (31 minutes on 2 busy cores), so it runs
#              only when STOWAGE_REQUIRE_ADMISSION is set (.ci/run sets it).
#   fuzz       running the fuzzers (make fuzz) for FUZZTIME each: nothing is
#              missing, but it takes about 4 minutes on 2 cores, so it runs
#              only when STOWAGE_REQUIRE_FUZZ is set (.ci/run sets it); the
#              fuzzers' seed corpora run as tests in `go test` regardless.
set -u

absent=0
failed=0

# report PART REQUIRE_VAR MESSAGE: one line for an absent part.
report() {
  if [[ -n "${!2:-}" ]]; then
    echo "$1: $2 is set, but $3" >&2
    failed=1
  else
    echo "$1: SKIPPED $3"
    absent=1
  fi
}

for part in "$@"; do
  case $part in
    registry)
      miss=()
      command -v docker-registry >/dev/null 2>&1 || command -v registry >/dev/null 2>&1 || miss+=(docker-registry)
      command -v htpasswd >/dev/null 2>&1 || miss+=(htpasswd)
      if ((${#miss[@]})); then
        report registry STOWAGE_REQUIRE_REGISTRY "the tests against a real registry (lock, bump, vet --remote, mirror, fault proxy, Quickstart): no ${miss[*]} on PATH; get them with: apt-get install docker-registry apache2-utils"
      fi
      ;;
    kustomize)
      gobin="$(go env GOBIN 2>/dev/null)"
      [[ -n $gobin ]] || gobin="$(go env GOPATH 2>/dev/null)/bin"
      if ! command -v kustomize >/dev/null 2>&1 && [[ ! -x $gobin/kustomize ]]; then
        report kustomize STOWAGE_REQUIRE_KUSTOMIZE "stowage as an exec KRM function in the real kustomize: no kustomize on PATH or in $gobin; get it with: go install sigs.k8s.io/kustomize/kustomize/v5@v5.8.2"
      fi
      ;;
    cosign)
      gobin="$(go env GOBIN 2>/dev/null)"
      [[ -n $gobin ]] || gobin="$(go env GOPATH 2>/dev/null)/bin"
      if ! command -v cosign >/dev/null 2>&1 && [[ ! -x $gobin/cosign ]]; then
        report cosign STOWAGE_REQUIRE_COSIGN "the tests with real signatures (cosign sign, attest, verify and tree around stowage mirror): no cosign on PATH or in $gobin; get it with: go install github.com/sigstore/cosign/v3/cmd/cosign@v3.1.3"
      fi
      ;;
    cold-rebuild)
      if [[ -z ${STOWAGE_REQUIRE_COLD_REBUILD:-} ]]; then
        echo "cold-rebuild: SKIPPED rebuilding the helper image from an empty build cache of its own (internal/helperimage: the standard library compiled for linux/amd64 and linux/arm64 from nothing, about 40 CPU seconds; the rebuild from the shared cache is compared): set STOWAGE_REQUIRE_COLD_REBUILD=1 to run it, as .ci/run does"
        absent=1
      fi
      ;;
    pprof)
      if [[ -z ${STOWAGE_REQUIRE_PPROF:-} ]]; then
        echo "pprof: SKIPPED reading a CPU profile with go tool pprof (hack/perf TestFocusedSamples: Go builds the tool from source on first use, about a CPU minute from an empty build cache): set STOWAGE_REQUIRE_PPROF=1 to run it, as .ci/run does; make bench uses the same tool"
        absent=1
      fi
      ;;
    e2e)
      assets="${KUBEBUILDER_ASSETS:-}"
      miss=()
      for b in kube-apiserver etcd; do
        [[ -n $assets && -x $assets/$b ]] || miss+=("$b")
      done
      if ((${#miss[@]})); then
        report e2e STOWAGE_REQUIRE_APISERVER "the e2e/ module against a real kube-apiserver (not compiled): no ${miss[*]} in KUBEBUILDER_ASSETS=${assets:-(unset)}; get them with: apt-get install etcd-server && export KUBEBUILDER_ASSETS=\"\$(hack/kube-apiserver/build.sh | tail -n 1)\" (about 10 minutes cold on 2 cores)"
      fi
      ;;
    node)
      if ! msg="$(bash "$(dirname "$0")/../node/parts.sh")"; then
        report node STOWAGE_REQUIRE_NODE "the real-node suite (node/, not compiled): $msg"
      fi
      ;;
    image-volume)
      if ! msg="$(bash "$(dirname "$0")/../node/parts.sh" image-volume)"; then
        report image-volume STOWAGE_REQUIRE_IMAGE_VOLUME "the real-node image-volume test (TestImageVolume) and TestNewNode's artifacts (the rest of node/ runs): $msg"
      fi
      ;;
    admission)
      if [[ -z ${STOWAGE_REQUIRE_ADMISSION:-} ]]; then
        echo "admission: SKIPPED checking the rendered admission policies with Kyverno's, policy-controller's and containers-image's own code (admissiontest/, not compiled: 14 CPU minutes cold, 31 minutes on 2 busy cores): run make admission, or set STOWAGE_REQUIRE_ADMISSION=1 as .ci/run does"
        absent=1
      fi
      ;;
    fuzz)
      if [[ -z ${STOWAGE_REQUIRE_FUZZ:-} ]]; then
        echo "fuzz: SKIPPED running the 8 fuzzers (about 5 minutes on 2 cores: 6 instrumented test builds, then 15 s each; their seed corpora ran as tests above): run make fuzz, or set STOWAGE_REQUIRE_FUZZ=1 as .ci/run does"
        absent=1
      fi
      ;;
    *)
      echo "usage: $0 PART... (PART: registry, kustomize, cosign, cold-rebuild, pprof, e2e, node, image-volume, admission, fuzz)" >&2
      exit 2
      ;;
  esac
done
((failed)) && exit 1
((absent)) && exit 3
exit 0
