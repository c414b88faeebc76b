#!/usr/bin/env bash
# Build real Kubernetes v1.37.2 components from the Go module proxy into a
# cache folder outside the repository, and link Debian's etcd beside them:
#
#   ${STOWAGE_CACHE:-$HOME/.cache/stowage}/kube-v1.37.2/{kube-apiserver,kubectl,etcd,...}
#
#   hack/kube-apiserver/build.sh           # kube-apiserver and kubectl (e2e/, envtest)
#   hack/kube-apiserver/build.sh --node    # and kubelet, kube-controller-manager,
#                                          # kube-scheduler (the real-node suite, node/)
#   hack/kube-apiserver/build.sh CMD...    # just these commands
#
# A command is built only when the folder lacks a binary of it reporting this
# version. Cold, on 2 cores: kube-apiserver and kubectl about 10 minutes;
# then kubelet about 14, kube-controller-manager 3, kube-scheduler 1 (they
# share most packages with the API server, so a build after it is shorter).
# The last line printed on stdout is the folder, for KUBEBUILDER_ASSETS:
#
#   export KUBEBUILDER_ASSETS="$(hack/kube-apiserver/build.sh | tail -n 1)"
#
# Every command comes from the throw-away module beside this script (go.mod:
# one `tool` line per command, k8s.io/kubernetes and its staging modules
# pinned), built the same way: CGO_ENABLED=0 -trimpath, version stamped.
# etcd is taken from $ETCD, or etcd on $PATH, or /usr/bin/etcd (Debian's
# etcd-server package; 3.4 works with this kube-apiserver).
set -euo pipefail
cd "$(dirname "$0")"

version=v1.37.2
dir="${STOWAGE_CACHE:-$HOME/.cache/stowage}/kube-$version"
mkdir -p "$dir"

known=(kube-apiserver kubectl kubelet kube-controller-manager kube-scheduler)
case "${1:-}" in
  "") cmds=(kube-apiserver kubectl) ;;
  --node) cmds=("${known[@]}") ;;
  -*) echo "usage: $0 [--node | CMD...] (CMD one of: ${known[*]})" >&2; exit 2 ;;
  *) cmds=("$@") ;;
esac
for cmd in "${cmds[@]}"; do
  case " ${known[*]} " in
    *" $cmd "*) ;;
    *) echo "$0: unknown command $cmd (one of: ${known[*]})" >&2; exit 2 ;;
  esac
done

# kubectl version, the apiserver's /version and the kubelet's node status
# report what component-base was stamped with; unstamped builds say v0.0.0
# and kubectl refuses them.
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"

# built CMD: whether $dir holds CMD reporting $version.
built() {
  [[ -x "$dir/$1" ]] || return 1
  case $1 in
    kubectl) "$dir/$1" version --client ;;
    *) "$dir/$1" --version ;;
  esac 2>/dev/null | grep -F "$version" >/dev/null
  # (not grep -q: it stops reading at the first match, kubectl dies of
  # SIGPIPE writing the rest, and pipefail would report the pipe failed)
}

missing=()
for cmd in "${cmds[@]}"; do
  built "$cmd" || missing+=("$cmd")
done

if ((${#missing[@]})); then
  echo "building ${missing[*]} $version into $dir (cold on 2 cores: see the top of this script)" >&2
  start=$SECONDS
  # One go build for all of them, so the packages they share compile once
  # and both cores stay busy. It writes into a temporary folder beside the
  # cache, and each binary is renamed into place only after the build
  # succeeded: an interrupted build never leaves a binary that the check
  # above would take for a finished one.
  tmp="$(mktemp -d "$dir/.build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  pkgs=()
  for cmd in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$cmd"); done
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}"
  for cmd in "${missing[@]}"; do mv -f "$tmp/$cmd" "$dir/$cmd"; done
  echo "built ${missing[*]} in $((SECONDS - start))s" >&2
fi

etcd="${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}"
if [[ -x "$etcd" ]]; then
  ln -sf "$etcd" "$dir/etcd"
else
  echo "no etcd found (apt-get install etcd-server, or set ETCD): envtest cannot start" >&2
fi

echo "$dir"
