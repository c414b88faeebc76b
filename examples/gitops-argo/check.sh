#!/usr/bin/env bash
# CI guard for a kustomization that uses stowage as a KRM function: build it
# the way Argo CD does and fail when the function did not run (kustomize
# skips exec functions silently without --enable-exec, and `kubectl
# kustomize` always does) or left an image unpinned.
#   examples/gitops-argo/check.sh [KUSTOMIZATION_DIR]
set -euo pipefail
dir="${1:-$(dirname "$0")/prepull}"
out="$(kustomize build --enable-alpha-plugins --enable-exec "$dir")"
grep -q 'stowage.dev/images-hash' <<<"$out" || { echo "check: no stowage DaemonSet in the output: did the function run?" >&2; exit 1; }
if grep -E '^\s*(- )?image: ' <<<"$out" | grep -v '@sha256:'; then
  echo "check: the images above are not pinned to a digest" >&2
  exit 1
fi
echo "check: ok"
