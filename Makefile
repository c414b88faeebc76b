# stowage — see README.md.
GO ?= go

.PHONY: build cross snapshot test apitest vet fmt golden lock-examples helper helper-image stowage-image bench bench-startup bench-large bench-mirror bench-lanes crane kbld fuzz e2e fluxoci node admission kube-node containerd2

# stowage version: the tag and commit of the work tree (empty without tags
# or git: the binary then asks its build information).
VERSION ?= $(shell git describe --tags --dirty 2>/dev/null)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)

# stowage as the release ships it (docs/install.md, "Two binaries"): the
# front, bin/stowage (-tags stowagefront: render, fn, version and the
# commands that link no Helm, sigstore-go, client-go or cobra/doc), and
# bin/stowage-full beside it, which the front runs for the others.
LDFLAGS = -X github.com/stowage/stowage/internal/version.version=$(VERSION) -X github.com/stowage/stowage/internal/version.commit=$(COMMIT)
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/stowage-full ./cmd/stowage
	$(GO) build -tags stowagefront -ldflags "$(LDFLAGS)" -o bin/stowage ./cmd/stowage

# Build and vet the main module for every platform users work on (README.md
# "Platforms"); .ci/run runs it before the tests, with GOPROXY=off. The
# flags are the release build's (.goreleaser.yaml) and the images'
# (internal/helperimage): CGO off and -trimpath, so that the snapshot
# release and make stowage-image after it find every package compiled and
# only link.
PLATFORMS = linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
CROSSFLAGS = -trimpath
cross:
	@for p in $(PLATFORMS); do \
		echo "GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 go build $(CROSSFLAGS) ./... && go vet $(CROSSFLAGS) ./..."; \
		GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) build $(CROSSFLAGS) ./... && \
		GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) vet $(CROSSFLAGS) ./... && \
		GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) vet -tags stowagefront $(CROSSFLAGS) ./cmd/stowage || exit 1; \
	done

# The release archives, checksums and SBOMs a release publishes
# (.goreleaser.yaml, docs/install.md), built offline into dist/ and
# checked by hack/release-check.sh. Needs goreleaser v2.17.0 and
# cyclonedx-gomod v1.10.0 on PATH (.ci/run installs them); after make
# cross it only links.
snapshot:
	$(GO) mod download
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct) GOPROXY=off goreleaser release --snapshot --clean
	bash hack/release-check.sh dist

# The test command of README.md and .ci/run. The optional heavy parts are
# checked first (hack/parts.sh, which compiles nothing): each absent one
# prints ONE line saying what is skipped, why and how to get it, and is not
# compiled; with its STOWAGE_REQUIRE_* variable set (.ci/run sets them all)
# an absent part fails instead.
#
# One build configuration for the whole run, the release's and .ci/run's:
# CGO off and -trimpath (unless the environment sets CGO_ENABLED, or
# GOFLAGS already holds -trimpath). The test binaries, the helper's test
# build (cmd/stowage-helper) and the helper image's linux/amd64 build
# (internal/helperimage) then compile each package once, and no package
# waits on a C compiler. `go test -vet=off` here and in the modules below:
# the `go vet ./...` just before ran every analyzer over the same packages
# and their test files, and go test's own subset would type-check every
# dependency once more for its facts (docs/development.md has the times).
#
# The tests that run stowage as a user does share the release's pair of
# binaries, built here first into bin/test/stowage (the front) and
# bin/test/stowage-full with the same build settings (so their packages
# are the test binaries' own), the front handed to them in STOWAGE_BIN
# (internal/testing/testbin): every command they run goes through the
# front as a user's does. Run alone, `go test` builds one binary holding
# every command once per test process instead.
TESTBIN = $(CURDIR)/bin/test/stowage
test: export CGO_ENABLED ?= 0
test: export GOFLAGS := $(if $(findstring -trimpath,$(GOFLAGS)),$(GOFLAGS),$(strip $(GOFLAGS) -trimpath))
test:
	@bash hack/parts.sh registry kustomize cosign cold-rebuild pprof; test $$? -ne 1
	$(GO) vet ./...
	$(GO) vet -tags stowagefront ./cmd/stowage
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt: not formatted (make fmt):"; echo "$$out"; exit 1; fi
	$(GO) build -o $(TESTBIN)-full ./cmd/stowage
	$(GO) build -tags stowagefront -o $(TESTBIN) ./cmd/stowage
	STOWAGE_BIN=$(TESTBIN) $(GO) test -vet=off -count=1 -timeout 30m ./...
	@STOWAGE_BIN=$(TESTBIN) $(MAKE) --no-print-directory apitest
	@STOWAGE_BIN=$(TESTBIN) $(MAKE) --no-print-directory e2e
	@STOWAGE_BIN=$(TESTBIN) $(MAKE) --no-print-directory fluxoci
	@STOWAGE_BIN=$(TESTBIN) $(MAKE) --no-print-directory node
	@bash hack/parts.sh admission; rc=$$?; \
	if [ $$rc -eq 0 ]; then STOWAGE_BIN=$(TESTBIN) $(MAKE) --no-print-directory admission; \
	elif [ $$rc -ne 3 ]; then exit 1; fi
	@bash hack/parts.sh fuzz; rc=$$?; \
	if [ $$rc -eq 0 ]; then $(MAKE) --no-print-directory fuzz; \
	elif [ $$rc -ne 3 ]; then exit 1; fi

# Run each fuzzer for a short fixed time, after its committed seeds ran as
# tests in `make test`; a failure writes the input under the package's
# testdata/fuzz/<Fuzzer>/ (keep it there, renamed regress-*, with the fix).
# Longer: make fuzz FUZZTIME=10m. hack/fuzz-one.sh runs each one, and runs
# it once more when it ended with Go 1.26's coordinator race
# (golang/go#75804) and no failing input.
FUZZTIME ?= 15s
FUZZERS = internal/render:FuzzContainerNames internal/render:FuzzRender internal/render:FuzzDockerConfigJSON schema:FuzzLoadFiles internal/lock:FuzzParse fn:FuzzResourceList internal/mirror:FuzzBundleIndex internal/kustomization:FuzzLoad
fuzz:
	@mkdir -p bin/fuzz
	@for pkg in internal/render schema internal/lock fn internal/mirror internal/kustomization; do $(GO) test -c -fuzz . -o bin/fuzz/$$(basename $$pkg).test ./$$pkg || exit 1; done
	@for f in $(FUZZERS); do \
		pkg=$${f%%:*}; name=$${f##*:}; bin=$$(basename $$pkg); \
		echo "fuzz ./$$pkg $$name for $(FUZZTIME)"; \
		bash hack/fuzz-one.sh $(CURDIR)/bin/fuzz/$$bin.test $$pkg $$name $(FUZZTIME) \
			"$$($(GO) env GOCACHE)/fuzz/github.com/stowage/stowage/$$pkg" || exit 1; \
	done

# The public Go API used from another module (apitest/, its own module
# outside github.com/stowage/stowage, so it cannot import internal/):
# schema.Load, render.Render and its writers, fn.Processor and
# fn.NewCommand on an example, and cmd/stowage-fn (fn.Main) built and run
# beside stowage (bin/test/stowage under make test, else built once) and
# under kustomize when it is installed. It needs nothing optional, so it always
# runs; a few seconds once the main module is built.
apitest:
	cd apitest && $(GO) vet ./... && $(GO) test -vet=off -count=1 ./...

# The end-to-end tests against a real kube-apiserver: their own module, so
# that stowage never depends on controller-runtime. Without kube-apiserver
# and etcd in $KUBEBUILDER_ASSETS (default: the folder
# hack/kube-apiserver/build.sh fills) the module is not even compiled (its
# client-go and controller-runtime build is most of a cold `make test`):
# one line says so, or the target fails when STOWAGE_REQUIRE_APISERVER is
# set, as in .ci/run.
KUBEBUILDER_ASSETS ?= $(HOME)/.cache/stowage/kube-v1.37.2
export KUBEBUILDER_ASSETS
e2e:
	@bash hack/parts.sh e2e; rc=$$?; \
	if [ $$rc -eq 0 ]; then \
		echo "cd e2e && $(GO) vet ./... && $(GO) test -vet=off -count=1 ./..."; \
		cd e2e && $(GO) vet ./... && $(GO) test -vet=off -count=1 ./...; \
	elif [ $$rc -ne 3 ]; then exit 1; fi

# The Flux OCI test (fluxoci/, its own module, so that stowage never
# depends on Flux's packages): stowage push's artifact pulled and extracted
# by Flux's own client (github.com/fluxcd/pkg/oci) from docker-registry on
# 127.0.0.1. Without docker-registry it is not compiled: the registry
# part's one line says so (STOWAGE_REQUIRE_REGISTRY makes it a failure).
fluxoci:
	@bash hack/parts.sh registry >/dev/null 2>&1; rc=$$?; \
	if [ $$rc -eq 0 ]; then \
		echo "cd fluxoci && $(GO) vet ./... && $(GO) test -vet=off -count=1 ./..."; \
		cd fluxoci && $(GO) vet ./... && $(GO) test -vet=off -count=1 ./...; \
	elif [ $$rc -eq 3 ]; then echo "fluxoci: SKIPPED the Flux OCI test (fluxoci/, not compiled): no docker-registry; get it with: apt-get install docker-registry apache2-utils"; \
	else bash hack/parts.sh registry; exit 1; fi

# The real-node suite (node/, its own module; README.md "Proof on a real
# node"): a single-node cluster on containerd inside a private network and
# mount namespace, as root. Its parts are checked first (hack/parts.sh
# node, which runs node/parts.sh) so that without them nothing is compiled:
# one line says what is missing and how to get it, and STOWAGE_REQUIRE_NODE
# (set by .ci/run) makes that a failure. `make kube-node` builds the
# Kubernetes binaries it needs. Its image-volume test (TestImageVolume)
# also needs containerd 2 (`make containerd2`); without it that test alone
# skips, with one line here (hack/parts.sh image-volume) and its own skip,
# or fails when STOWAGE_REQUIRE_IMAGE_VOLUME is set. TestNewNode (the
# startup gate, pull lanes and image garbage collection, docs/proof.md; on
# containerd 2 when present, with artifacts) takes about 6 to 6.5 minutes,
# most of it waiting for the kubelet's 5-minute collection period.
node:
	@bash hack/parts.sh node; rc=$$?; \
	if [ $$rc -eq 0 ]; then \
		bash hack/parts.sh image-volume; if [ $$? -eq 1 ]; then exit 1; fi; \
		echo "cd node && $(GO) vet ./... && $(GO) test -vet=off -count=1 -v -timeout 30m ./..."; \
		cd node && $(GO) vet ./... && $(GO) test -vet=off -count=1 -v -timeout 30m ./...; \
	elif [ $$rc -ne 3 ]; then exit 1; fi

# The rendered admission policies checked with the code of the projects
# that run them (admissiontest/, its own module, so that stowage never
# depends on Kyverno, policy-controller or containers-image): strict decode
# and validation with their own types, containers-image's policy parser,
# and the real cosign verifying a site copy under the key or trusted root
# the rendered rule carries. Its cold compile is long (kyverno's API
# package alone pulls in some 1,800 packages: 14 CPU minutes, 31 minutes
# on 2 busy cores), so make test runs it only with
# STOWAGE_REQUIRE_ADMISSION set (.ci/run sets it and compiles it in the
# background early); make admission runs it regardless. The tag
# lets containers-image verify OpenPGP in Go, without cgo and gpgme. Its
# signing test needs docker-registry and cosign, and skips without them
# (or fails with STOWAGE_REQUIRE_REGISTRY or STOWAGE_REQUIRE_COSIGN set).
ADMISSIONTAGS = containers_image_openpgp
admission:
	cd admissiontest && $(GO) vet -tags $(ADMISSIONTAGS) ./... && $(GO) test -vet=off -count=1 -tags $(ADMISSIONTAGS) ./...

# kube-apiserver, kubectl, kubelet, kube-controller-manager and
# kube-scheduler v1.37.2 into ~/.cache/stowage/kube-v1.37.2, built from the
# Go module proxy only when missing (about 25 minutes cold on 2 cores).
kube-node:
	bash hack/kube-apiserver/build.sh --node

# containerd v2.4.2 (containerd, containerd-shim-runc-v2, ctr) into
# ~/.cache/stowage/containerd-v2.4.2, built from the Go module proxy only
# when missing (about 10 minutes cold on 2 cores), for the real-node suite's
# image-volume test: Debian's containerd 1.6 has no CRI image mounts.
containerd2:
	bash hack/containerd/build.sh

fmt:
	gofmt -l -w .

# Regenerate golden/ from the current output (review the diff line by line).
golden:
	$(GO) test ./cmd/stowage -run TestGoldenExamples -update

# Rewrite the examples' locks with `stowage lock` against a local
# docker-registry seeded with the deterministic stand-in images
# (apt-get install docker-registry); TestExampleLocksFromRegistry checks them.
lock-examples: build
	$(GO) run ./hack/lockexamples -stowage bin/stowage examples/openpai-offline examples/submarine-notebooks examples/gpu-platform examples/gitops-flux/config examples/gitops-argo/prepull

# crane from the go-containerregistry version stowage uses, for the benchmark.
crane:
	$(GO) build -o bin/crane github.com/google/go-containerregistry/cmd/crane

# kbld (carvel.dev/kbld) for the benchmark, built from the Go module proxy in
# a throw-away module (hack/bench/kbld.sh; stowage's go.mod is untouched). A
# build that fails is reported in docs/benchmarks.md and the rest goes on.
KBLD_VERSION ?= v0.46.0
kbld:
	KBLD_VERSION=$(KBLD_VERSION) bash hack/bench/kbld.sh bin/kbld

# Measure everything side by side on this machine and write
# docs/benchmarks.md (a measurement, not a test; about 5 minutes):
# hack/bench times `stowage lock` and a steady-state `stowage bump` of 1,000
# distinct tags on a local docker-registry against a sequential `crane
# digest` loop, a sequential `skopeo inspect` loop (apt-get install -y
# skopeo) and kbld, counting registry requests per reference; hack/perf
# times render against `cue export` of the same files with the schema,
# start-up against `cue version`, the scale series up to 20,000 images, the
# KRM function's share of kustomize build over a kyaml no-op and `stowage
# fn` pinning 20,000 Deployments against that no-op, and writes the report
# with the registry section;
# hack/mirrorbench copies a synthetic set of 52 images (about 300 MB of unique
# blobs, shared base layers) between two local docker-registry instances
# with `stowage mirror`, a minimal blob copy (the floor), `skopeo sync
# --preserve-digests` (cache cold and warm) and a sequential `crane copy` loop,
# and streams a 1 GB layer for stowage's peak memory (about 2 GB of disk in
# a temporary directory, removed at the end; several minutes).
# BENCH_PORTS=LO-HI and MIRROR_PORTS=LO-HI put the harnesses' registries
# and proxies on fixed ports of 127.0.0.1 instead of free ones.
bench: build crane kbld
	@command -v skopeo >/dev/null || echo "bench: skopeo is not installed (apt-get install -y skopeo); it is left out"
	$(GO) run ./hack/bench -stowage bin/stowage -crane bin/crane -kbld bin/kbld -n 1000 $(if $(BENCH_PORTS),-ports $(BENCH_PORTS)) -md bin/bench-registry.md -json bin/bench-registry.json
	$(GO) run ./hack/mirrorbench -stowage bin/stowage -crane bin/crane $(if $(MIRROR_PORTS),-ports $(MIRROR_PORTS)) -md bin/bench-mirror.md
	$(GO) run ./hack/perf -stowage bin/stowage -lock-report bin/bench-registry.md -lock-json bin/bench-registry.json -mirror-report bin/bench-mirror.md -out docs/benchmarks.md
	@bash hack/parts.sh node >/dev/null 2>&1; rc=$$?; \
	if [ $$rc -eq 0 ]; then $(MAKE) --no-print-directory bench-lanes; \
	else echo "bench: the pull-lanes benchmark is left out: it needs the real-node suite's parts (bash hack/parts.sh node says which; as root)"; fi

# The pull-lanes benchmark on a real kubelet (node/ TestLanesBenchmark, as
# root, with the real-node suite's parts): 6 images of 40–320 MB of
# incompressible layers (960 MiB) from a docker-registry on the suite's
# loopback, pulled by one puller rendered with lanes 1, 2 and 4, each on a
# fresh single-node cluster whose kubelet has serializeImagePulls: false
# and maxParallelImagePulls: 4; the time from apply until every image is in
# containerd. About 3 GB of disk at a time (registry, content, snapshots)
# and 5–10 minutes. The table goes to bin/bench-lanes.md; docs/benchmarks.md
# ("Pull lanes") quotes it with the machine. Not part of make test.
bench-lanes:
	@mkdir -p bin
	cd node && STOWAGE_BENCH_LANES=$(CURDIR)/bin/bench-lanes.md $(GO) test -vet=off -count=1 -v -timeout 40m -run 'TestLanesBenchmark$$' .

# The start-up goals alone (a minute or two): render of each example
# against `cue export` + schema, `stowage version` against `cue version`,
# and the function's share of `kustomize build` over a kyaml no-op (stowage
# fn, and fn.Main in a binary of its own: hack/perf/fnmain), printed to
# stdout (cue is built once into $$XDG_CACHE_HOME/stowage/bench).
bench-startup: build
	$(GO) run ./hack/perf -startup -stowage bin/stowage

# The 20,000-image goals alone (several minutes): render of the largest
# scale config against `cue export` + schema, and `stowage fn` pinning
# 20,000 Deployments against a kyaml no-op, printed to stdout.
bench-large: build
	$(GO) run ./hack/perf -large -stowage bin/stowage

# The mirror measurement alone; its section of docs/benchmarks.md is
# replaced in place.
# MIRROR_PORTS=LO-HI puts its registries and proxy on fixed ports.
bench-mirror: build crane
	@command -v skopeo >/dev/null || echo "bench-mirror: skopeo is not installed (apt-get install -y skopeo); it is left out"
	$(GO) run ./hack/mirrorbench -stowage bin/stowage -crane bin/crane $(if $(MIRROR_PORTS),-ports $(MIRROR_PORTS)) -md bin/bench-mirror.md -splice docs/benchmarks.md

# The static helper binary the pre-pull DaemonSets run.
helper:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags=-s -o bin/stowage-helper ./cmd/stowage-helper

# The project's helper image, reproducible and multi-arch (linux/amd64,
# linux/arm64), built with go-containerregistry without Docker
# (internal/helperimage) and written as an OCI image layout; prints the
# index digest, the same on every machine with the same Go toolchain.
# Publish it with .github/workflows/release-helper.yml, or carry it to a
# site registry like any other image.
HELPER_REF ?= ghcr.io/stowage/stowage-helper:v0.1.0
helper-image:
	$(GO) run ./hack/helperimage -o bin/helper-image -ref $(HELPER_REF)

# The stowage image: the stowage CLI alone at /usr/local/bin/stowage (no
# shell), linux/amd64 and linux/arm64, built the same reproducible way as
# the helper image, as an OCI layout in bin/stowage-image; the sidecar of
# examples/gitops-argo/argocd-repo-server.yaml, or a CI step's image.
STOWAGE_IMAGE_VERSION ?= $(if $(VERSION),$(VERSION),v0.0.0-dev)
STOWAGE_REF ?= ghcr.io/stowage/stowage:$(STOWAGE_IMAGE_VERSION)
stowage-image:
	$(GO) run ./hack/helperimage -image stowage -version $(STOWAGE_IMAGE_VERSION) -o bin/stowage-image -ref $(STOWAGE_REF)
