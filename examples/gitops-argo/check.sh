#!/usr/bin/env bash
# CI guard for a kustomization that uses stowage as a KRM function:
#   1. the lock covers every image the function will pin (pre-pulled and
#      pin-only) and vet accepts what the function would;
#   2. kustomize builds it the way Argo CD does, and the output has the
#      stowage DaemonSet (kustomize with --enable-alpha-plugins but without
#      --enable-exec skips an exec function silently) and no unpinned image.
#   examples/gitops-argo/check.sh [KUSTOMIZATION_DIR]
set -euo pipefail
dir="${1:-$(dirname "$0")/prepull}"
stowage lock --check "$dir"
stowage vet "$dir"
out="$(kustomize build --enable-alpha-plugins --enable-exec "$dir")"
grep -q 'stowage.dev/images-hash' <<<"$out" || { echo "check: no stowage DaemonSet in the output: did the function run?" >&2; exit 1; }
if grep -E '^\s*(- )?image: ' <<<"$out" | grep -v '@sha256:'; then
  echo "check: the images above are not pinned to a digest" >&2
  exit 1
fi
echo "check: ok"
