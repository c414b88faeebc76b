#!/usr/bin/env bash
# Build the real kube-apiserver and kubectl v1.37.2 for the end-to-end tests
# (e2e/, run through controller-runtime's envtest) into a cache folder outside
# the repository, and link Debian's etcd beside them:
#
#   ${STOWAGE_CACHE:-$HOME/.cache/stowage}/kube-v1.37.2/{kube-apiserver,kubectl,etcd}
#
# Nothing is built when the folder already holds both binaries of this
# version (a cold build takes about 10 minutes on 2 cores). The last line
# printed on stdout is the folder, for KUBEBUILDER_ASSETS:
#
#   export KUBEBUILDER_ASSETS="$(hack/kube-apiserver/build.sh)"
#
# etcd is taken from $ETCD, or etcd on $PATH, or /usr/bin/etcd (Debian's
# etcd-server package; 3.4 works with this kube-apiserver).
set -euo pipefail
cd "$(dirname "$0")"

version=v1.37.2
dir="${STOWAGE_CACHE:-$HOME/.cache/stowage}/kube-$version"
mkdir -p "$dir"

# kubectl version and the apiserver's /version report what component-base
# was stamped with; unstamped builds say v0.0.0 and kubectl refuses them.
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"

# built CMD: whether $dir holds CMD reporting $version.
built() {
  case $1 in
    kube-apiserver) "$dir/$1" --version ;;
    kubectl) "$dir/$1" version --client ;;
  esac 2>/dev/null | grep -F "$version" >/dev/null
  # (not grep -q: it stops reading at the first match, kubectl dies of
  # SIGPIPE writing the rest, and pipefail would report the pipe failed)
}

for cmd in kube-apiserver kubectl; do
  if [[ -x "$dir/$cmd" ]] && built "$cmd"; then
    continue
  fi
  echo "building $cmd $version into $dir (about 10 minutes cold)" >&2
  start=$SECONDS
  # Build into a temporary name and rename, so an interrupted build never
  # leaves a binary that the check above would take for a finished one.
  CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$dir/.$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd"
  mv -f "$dir/.$cmd.tmp" "$dir/$cmd"
  echo "built $cmd in $((SECONDS - start))s" >&2
done

etcd="${ETCD:-$(command -v etcd || echo /usr/bin/etcd)}"
if [[ -x "$etcd" ]]; then
  ln -sf "$etcd" "$dir/etcd"
else
  echo "no etcd found (apt-get install etcd-server, or set ETCD): envtest cannot start" >&2
fi

echo "$dir"
