#!/usr/bin/env bash
# Build kbld (carvel.dev/kbld) for `make bench` into $1 (default bin/kbld),
# from the Go module proxy, in a throw-away module so that stowage's go.mod
# is untouched. `go install carvel.dev/kbld/cmd/kbld@VERSION` does not work
# here: the proxy refuses the module's version list, which `go install`
# reads for deprecations; `go get` of the exact version in a module works.
# The output goes to $1.log; a failed build is reported by hack/bench (kbld
# is then left out of the comparison, and the report says why), so this
# script always exits 0.
set -uo pipefail
out="${1:-bin/kbld}"
version="${KBLD_VERSION:-v0.46.0}"
mkdir -p "$(dirname "$out")"
out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
log="$out.log"
if [ -x "$out" ] && [ "$(cat "$out.version" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
rm -f "$out" "$out.version"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(
  cd "$tmp" &&
  printf 'module kbldbuild\n\ngo 1.26\n' > go.mod &&
  GOFLAGS= go get "carvel.dev/kbld/cmd/kbld@$version" &&
  GOFLAGS= go build -o "$out" carvel.dev/kbld/cmd/kbld
) > "$log" 2>&1
if [ -x "$out" ]; then
  echo "$version" > "$out.version"
  echo "kbld $version built: $out"
else
  echo "kbld $version did not build (see $log); make bench goes on without it" >&2
fi
exit 0
