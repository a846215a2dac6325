#!/usr/bin/env bash
# Hangar's own image for the Kubernetes stage, built from deploy/kubernetes/Containerfile the way the test images
# reach the cluster (no registry here): Podman in a scratch storage, `podman save`, `ctr images import` into the
# cluster's containerd. Tags: localhost/hangar:ci and localhost/hangar:ci-next (the same image under a second tag,
# for the rolling update of test/kubernetes.deploy.test.ts). The base has no registry to come from either: it is
# this machine's busybox, node and node's libraries (an operator uses docker.io/library/node:20-bookworm-slim).
# The pruned production node_modules are cached per package-lock.json in $HANGAR_K8S_DIR/hangar-image-deps.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
k8s=${HANGAR_K8S_DIR:-/var/cache/hangar-k8s}
tmp=$(mktemp -d /tmp/hangar-image.XXXXXX)
pm() { podman --root "$tmp/storage" --runroot "$tmp/run" "$@"; }
cleanup() {
  pm rmi -af >/dev/null 2>&1 || true
  rm -rf "$tmp" 2>/dev/null || true
}
trap cleanup EXIT
t0=$(date +%s)

# The base: busybox (sh and wget for the test cluster's overlay) and flock, node and its shared libraries, a user
# 10001 (hangar) and a writable /tmp.
base="$tmp/base"
mkdir -p "$base/bin" "$base/etc" "$base/usr/bin" "$base/tmp" "$base/proc" "$base/sys" "$base/dev"
chmod 1777 "$base/tmp"
cp /bin/busybox "$base/bin/"
for a in $(/bin/busybox --list); do [ -e "$base/bin/$a" ] || ln -s busybox "$base/bin/$a"; done
# Debian's busybox has no flock applet: util-linux's, as in node:20-bookworm-slim (it needs only libc).
cp /usr/bin/flock "$base/bin/flock"
printf 'root:x:0:0:root:/root:/bin/sh\nhangar:x:10001:10001:hangar:/data:/bin/sh\n' >"$base/etc/passwd"
printf 'root:x:0:\nhangar:x:10001:\n' >"$base/etc/group"
cp "$(readlink -f "$(command -v node)")" "$base/usr/bin/node"
for l in $(ldd "$(command -v node)" | grep -o '/[^ ]*'); do
  mkdir -p "$base$(dirname "$l")"
  cp -L "$l" "$base$l"
done
# better-sqlite3's native module links libstdc++ like node does; anything else it needs is copied too.
for so in $(find "$root/node_modules" -name '*.node' -path '*better-sqlite3*' 2>/dev/null); do
  for l in $(ldd "$so" | grep -o '/[^ ]*'); do [ -e "$base$l" ] || { mkdir -p "$base$(dirname "$l")" && cp -L "$l" "$base$l"; }; done
done
tar -C "$base" -cf "$tmp/base.tar" .
pm import -q "$tmp/base.tar" localhost/hangar-node-base:latest >/dev/null

HANGAR_IMAGE_DEPS_CACHE="$k8s/hangar-image-deps" "$root/deploy/kubernetes/image-context.sh" "$tmp/context"
pm build -q --pull=never --build-arg BASE=localhost/hangar-node-base:latest -t localhost/hangar:ci \
  -f "$root/deploy/kubernetes/Containerfile" "$tmp/context" >/dev/null
pm tag localhost/hangar:ci localhost/hangar:ci-next
user=$(pm image inspect --format '{{.Config.User}}' localhost/hangar:ci)
[ "$user" = 10001:10001 ] || { echo "hangar-image.sh: the image runs as '$user', not 10001:10001" >&2; exit 1; }
pm save -q --format docker-archive -m -o "$tmp/hangar.tar" localhost/hangar:ci localhost/hangar:ci-next
ctr --address "$k8s/run/containerd.sock" -n k8s.io images import "$tmp/hangar.tar" >/dev/null
echo "hangar-image: localhost/hangar:ci and :ci-next imported ($(du -m "$tmp/hangar.tar" | cut -f1) MB, $(($(date +%s) - t0)) s)"
