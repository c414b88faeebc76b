# stowage — see README.md.
GO ?= go

.PHONY: build test vet fmt golden lock-examples helper

build:
	$(GO) build -o bin/stowage ./cmd/stowage

# The test command of README.md and .ci/run.
test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

fmt:
	gofmt -l -w .

# Regenerate golden/ from the current output (review the diff line by line).
golden:
	$(GO) test ./cmd/stowage -run TestGoldenExamples -update

# Rewrite the examples' locks from the deterministic stand-in images.
lock-examples:
	$(GO) run ./hack/genlock examples/openpai-offline examples/submarine-notebooks

# The static helper binary the pre-pull DaemonSets run.
helper:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags=-s -o bin/stowage-helper ./cmd/stowage-helper
