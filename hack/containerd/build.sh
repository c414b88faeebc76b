#!/usr/bin/env bash
# Build containerd v2.4.2 (containerd, containerd-shim-runc-v2, ctr) from the
# Go module proxy into a cache folder outside the repository:
#
#   ${STOWAGE_CACHE:-$HOME/.cache/stowage}/containerd-v2.4.2/{containerd,containerd-shim-runc-v2,ctr}
#
# The real-node suite (node/) runs it for TestImageVolume only: Kubernetes
# image volumes need a runtime that mounts images through the CRI, which
# containerd 2 does and Debian bookworm's containerd 1.6 does not. The rest
# of the suite keeps Debian's containerd; both use Debian's runc.
#
# Nothing is built when the folder already holds all three reporting this
# version. Cold, on 2 cores: about 10 minutes (measured in
# docs/development.md "Tests and their parts"). The last line printed on
# stdout is the folder.
#
# The commands come from the throw-away module beside this script (go.mod:
# one `tool` line each, github.com/containerd/containerd/v2 pinned), built
# the way the Kubernetes binaries are (CGO_ENABLED=0 -trimpath, version
# stamped), with the build tags that leave out the snapshotters needing
# cgo or kernel headers (btrfs, devmapper, zfs): the suite uses overlayfs
# and native.
set -euo pipefail
cd "$(dirname "$0")"

version=v2.4.2
dir="${STOWAGE_CACHE:-$HOME/.cache/stowage}/containerd-$version"
mkdir -p "$dir"

cmds=(containerd containerd-shim-runc-v2 ctr)
pkg=github.com/containerd/containerd/v2

# built CMD: whether $dir holds CMD reporting $version.
built() {
  [[ -x "$dir/$1" ]] || return 1
  case $1 in
    containerd-shim-runc-v2) "$dir/$1" -v ;;
    *) "$dir/$1" --version ;;
  esac 2>/dev/null | grep -F " $version" >/dev/null
}

missing=()
for cmd in "${cmds[@]}"; do
  built "$cmd" || missing+=("$cmd")
done

if ((${#missing[@]})); then
  echo "building ${missing[*]} $version into $dir (cold on 2 cores: about 10 minutes)" >&2
  start=$SECONDS
  # One go build for all of them into a temporary folder beside the cache;
  # each binary is renamed into place only after the build succeeded, so
  # an interrupted build never leaves one the check above would accept.
  tmp="$(mktemp -d "$dir/.build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  pkgs=()
  for cmd in "${missing[@]}"; do pkgs+=("$pkg/cmd/$cmd"); done
  CGO_ENABLED=0 go build -trimpath -tags no_btrfs,no_devmapper,no_zfs \
    -ldflags "-s -w -X $pkg/version.Version=$version" \
    -o "$tmp/" "${pkgs[@]}"
  for cmd in "${missing[@]}"; do mv -f "$tmp/$cmd" "$dir/$cmd"; done
  echo "built ${missing[*]} in $((SECONDS - start))s" >&2
fi

echo "$dir"
