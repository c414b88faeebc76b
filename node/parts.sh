#!/usr/bin/env bash
# Check that every part the real-node suite (node/) needs is on this machine,
# without compiling anything. Prints nothing and exits 0 when all are there;
# otherwise prints ONE line naming what is missing and how to get it, and
# exits 3. The suite (node_test.go) and `make node` both run it, so the list
# lives here only.
#
# Parts: root; kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet and kubectl v1.37.2 in $STOWAGE_KUBE_DIR (default
# ~/.cache/stowage/kube-v1.37.2, built by hack/kube-apiserver/build.sh
# --node); Debian's etcd-server, containerd, runc, containernetworking-plugins,
# iptables, docker-registry and apache2-utils; util-linux's unshare and
# nsenter, iproute2's ip; cgroup v1 hierarchies (the kubelet runs with
# failCgroupV1: false) or cgroup v2.
#
#   bash parts.sh image-volume
#
# checks instead the one part TestImageVolume (and TestNewNode's
# artifacts) need besides those: containerd 2's containerd,
# containerd-shim-runc-v2 and ctr v2.4.2 in $STOWAGE_CONTAINERD2_DIR
# (default ~/.cache/stowage/containerd-v2.4.2, built by
# hack/containerd/build.sh): Debian's containerd 1.6 has no CRI image
# mounts. TestImageVolume skips with that one line and TestNewNode runs on
# Debian's containerd without artifacts, or both fail when
# STOWAGE_REQUIRE_IMAGE_VOLUME is set (.ci/run sets it).
set -u
if [[ ${1:-} == image-volume ]]; then
  dir="${STOWAGE_CONTAINERD2_DIR:-${STOWAGE_CACHE:-$HOME/.cache/stowage}/containerd-v2.4.2}"
  need=()
  for b in containerd containerd-shim-runc-v2 ctr; do
    [[ -x "$dir/$b" ]] || need+=("$b")
  done
  if ((${#need[@]})); then
    echo "missing containerd 2 (${need[*]}) in $dir, for image volumes: hack/containerd/build.sh (make containerd2; about 10 minutes cold on 2 cores)"
    exit 3
  fi
  exit 0
elif [[ -n ${1:-} ]]; then
  echo "usage: $0 [image-volume]" >&2
  exit 2
fi
kube="${STOWAGE_KUBE_DIR:-${STOWAGE_CACHE:-$HOME/.cache/stowage}/kube-v1.37.2}"
missing=()
debs=()
if [[ $(id -u) != 0 ]]; then
  echo "the real-node suite needs root (namespaces, mounts, cgroups); run it as root"
  exit 3
fi
need_kube=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
  [[ -x "$kube/$b" ]] || need_kube+=("$b")
done
for pair in etcd:etcd-server containerd:containerd containerd-shim-runc-v2:containerd \
  ctr:containerd runc:runc iptables:iptables docker-registry:docker-registry \
  htpasswd:apache2-utils unshare:util-linux nsenter:util-linux ip:iproute2 go:golang; do
  b=${pair%%:*} d=${pair#*:}
  if ! command -v "$b" >/dev/null 2>&1; then
    missing+=("$b")
    [[ " ${debs[*]:-} " == *" $d "* ]] || debs+=("$d")
  fi
done
cni="${STOWAGE_CNI_DIR:-/usr/lib/cni}"
for b in bridge host-local loopback; do
  if [[ ! -x "$cni/$b" ]]; then
    missing+=("$cni/$b")
    [[ " ${debs[*]:-} " == *" containernetworking-plugins "* ]] || debs+=(containernetworking-plugins)
  fi
done
if ((${#need_kube[@]} + ${#missing[@]} == 0)); then
  exit 0
fi
how=()
((${#need_kube[@]})) && how+=("${need_kube[*]} in $kube: hack/kube-apiserver/build.sh --node (about 25 minutes cold on 2 cores)")
((${#missing[@]})) && how+=("${missing[*]}: apt-get install --no-install-recommends ${debs[*]}")
msg="missing"
for h in "${how[@]}"; do msg+=" $h;"; done
echo "${msg%;}"
exit 3
