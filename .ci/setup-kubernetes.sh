# Sourced by .ci/kubernetes.sh (and usable by hand: `source .ci/setup-kubernetes.sh`): starts the single-node
# Kubernetes 1.20 of .ci/k8s/setup-k8s.sh, or reuses it when its API server already answers, imports the test
# images into its containerd, and exports what the Kubernetes tests read:
#   HANGAR_TEST_KUBECONFIG   admin kubeconfig of the cluster
#   HANGAR_K8S_STARTED       1 when this call started the cluster (.ci/kubernetes.sh then stops it)
# The build (Kubernetes from Debian's source, ~11 min idle, ~26 min on 2 busy cores) is cached in
# HANGAR_K8S_DIR (default /var/cache/hangar-k8s, outside the clone): later runs start it in ~30 s.
# Images: localhost/bb:latest (imported by setup-k8s.sh), localhost/hangar-test-worker:latest (busybox + node +
# the built worker SDK running test/fixtures/container-worker.mjs, as in .ci/setup-podman.sh) and
# localhost/hangar-test-python:latest (busybox + Debian's python3 + the runpod SDK running test/python/worker.py), built with Podman
# in a scratch storage, saved as a docker-archive and imported with `ctr -n k8s.io images import`.
_hk_ci_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_hk_root=$(cd "$_hk_ci_dir/.." && pwd)
export HANGAR_K8S_DIR=${HANGAR_K8S_DIR:-/var/cache/hangar-k8s}
export HANGAR_TEST_KUBECONFIG="$HANGAR_K8S_DIR/pki/admin.kubeconfig"
_hk_kubectl() { "$HANGAR_K8S_DIR/kubectl" --kubeconfig "$HANGAR_TEST_KUBECONFIG" "$@"; }

HANGAR_K8S_STARTED=0
if [ -x "$HANGAR_K8S_DIR/kubectl" ] && [ -f "$HANGAR_TEST_KUBECONFIG" ] && _hk_kubectl get --raw /readyz >/dev/null 2>&1; then
  echo "kubernetes: reusing the cluster of $HANGAR_K8S_DIR"
else
  W="$HANGAR_K8S_DIR" bash "$_hk_ci_dir/k8s/setup-k8s.sh"
  HANGAR_K8S_STARTED=1
fi
export HANGAR_K8S_STARTED
for _ in $(seq 1 120); do _hk_kubectl get node node1 -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True && break; sleep 1; done

# The busybox base both test images build on, as localhost/hangar-test-bb:latest in the scratch storage of $_hk_tmp.
_hk_bb_base() {
  mkdir -p "$_hk_tmp/bb/bin" "$_hk_tmp/bb/etc" "$_hk_tmp/bb/proc" "$_hk_tmp/bb/sys" "$_hk_tmp/bb/dev" "$_hk_tmp/bb/tmp" "$_hk_tmp/bb/workspace"
  cp /bin/busybox "$_hk_tmp/bb/bin/"
  for _a in $(/bin/busybox --list); do [ -e "$_hk_tmp/bb/bin/$_a" ] || ln -s busybox "$_hk_tmp/bb/bin/$_a"; done
  echo 'root:x:0:0:root:/root:/bin/sh' >"$_hk_tmp/bb/etc/passwd"
  tar -C "$_hk_tmp/bb" -cf "$_hk_tmp/bb.tar" .
  _hk_pm import -q "$_hk_tmp/bb.tar" localhost/hangar-test-bb:latest >/dev/null
}
# A scratch Podman storage in $_hk_tmp (`_hk_pm`) holding the busybox base; `_hk_image_import NAME DIR` then builds
# DIR/Containerfile as NAME, imports it into the cluster's containerd and removes the scratch storage.
_hk_image_begin() {
  _hk_tmp=$(mktemp -d /tmp/hangar-k8s-img.XXXXXX)
  _hk_pm() { podman --root "$_hk_tmp/storage" --runroot "$_hk_tmp/run" "$@"; }
  _hk_bb_base
}
_hk_image_import() {
  _hk_pm build -q --pull=never -t "$1" -f "$2/Containerfile" "$2" >/dev/null
  _hk_pm save -q -o "$_hk_tmp/image.tar" "$1"
  _hk_ctr images import "$_hk_tmp/image.tar" >/dev/null
  _hk_pm rm -af >/dev/null 2>&1 || true
  _hk_pm rmi -af >/dev/null 2>&1 || true
  rm -rf "$_hk_tmp" 2>/dev/null || true
}
_hk_ctr() { ctr --address "$HANGAR_K8S_DIR/run/containerd.sock" -n k8s.io "$@"; }
if ! _hk_ctr images ls -q | grep -qx 'localhost/hangar-test-worker:latest'; then
  (cd "$_hk_root" && [ -f dist/worker/index.js ] || npm run build >/dev/null)
  _hk_image_begin
  mkdir -p "$_hk_tmp/worker/rootfs/usr/bin" "$_hk_tmp/worker/rootfs/app"
  cp "$(command -v node)" "$_hk_tmp/worker/rootfs/usr/bin/node"
  for _l in $(ldd "$(command -v node)" | grep -o '/[^ ]*'); do mkdir -p "$_hk_tmp/worker/rootfs$(dirname "$_l")"; cp -L "$_l" "$_hk_tmp/worker/rootfs$_l"; done
  cp -r "$_hk_root/dist/worker" "$_hk_tmp/worker/rootfs/app/worker"
  cp "$_hk_root/test/fixtures/container-worker.mjs" "$_hk_tmp/worker/rootfs/app/worker.mjs"
  echo '{"type":"module"}' >"$_hk_tmp/worker/rootfs/app/package.json"
  printf 'FROM localhost/hangar-test-bb:latest\nCOPY rootfs/ /\nWORKDIR /app\nCMD ["node", "/app/worker.mjs"]\n' >"$_hk_tmp/worker/Containerfile"
  _hk_image_import localhost/hangar-test-worker:latest "$_hk_tmp/worker"
fi
# localhost/hangar-test-python:latest: Debian's python3 with its standard library and packages (the runpod SDK's
# dependencies, .ci/setup-python.sh), the unmodified runpod SDK of ../shared/clients/runpod-python in /sdk, and
# test/python/worker.py in /app (HANDLER picks the handler), on the busybox base; built and imported as above.
if ! _hk_ctr images ls -q | grep -qx 'localhost/hangar-test-python:latest'; then
  "$_hk_ci_dir/setup-python.sh"
  _hk_image_begin
  _hk_py=$(readlink -f /usr/bin/python3)
  _hk_pyver=$(/usr/bin/python3 -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')
  _hk_rf="$_hk_tmp/py/rootfs"
  mkdir -p "$_hk_rf/usr/bin" "$_hk_rf/usr/lib/python3" "$_hk_rf/app" "$_hk_rf/sdk"
  cp "$_hk_py" "$_hk_rf/usr/bin/python3"
  tar -C / --exclude='__pycache__' --exclude="usr/lib/$_hk_pyver/test" -cf - "usr/lib/$_hk_pyver" usr/lib/python3/dist-packages | tar -C "$_hk_rf" -xf -
  # OpenSSL's configuration and the modules it loads at run time (cryptography, which paramiko imports, loads them).
  _hk_ossl="/usr/lib/$(uname -m)-linux-gnu"
  mkdir -p "$_hk_rf/etc" "$_hk_rf$_hk_ossl"
  cp -rL /etc/ssl "$_hk_rf/etc/"
  for _d in ossl-modules engines-3; do [ -d "$_hk_ossl/$_d" ] && cp -rL "$_hk_ossl/$_d" "$_hk_rf$_hk_ossl/"; done
  # The shared libraries of the interpreter and of every compiled module it may load.
  for _f in "$_hk_py" $(find "$_hk_rf/usr/lib" -name '*.so*' -type f); do
    for _l in $(ldd "$_f" 2>/dev/null | grep -o '/[^ ]*'); do [ -e "$_hk_rf$_l" ] || { mkdir -p "$_hk_rf$(dirname "$_l")"; cp -L "$_l" "$_hk_rf$_l"; }; done
  done
  cp -r "$_hk_root/../shared/clients/runpod-python/sdk" "$_hk_root/../shared/clients/runpod-python/shims" "$_hk_rf/sdk/"
  cp "$_hk_root/test/python/worker.py" "$_hk_rf/app/worker.py"
  printf 'FROM localhost/hangar-test-bb:latest\nCOPY rootfs/ /\nENV PYTHONPATH=/sdk/sdk:/sdk/shims PYTHONDONTWRITEBYTECODE=1\nWORKDIR /app\nCMD ["python3", "-u", "/app/worker.py"]\n' >"$_hk_tmp/py/Containerfile"
  _hk_image_import localhost/hangar-test-python:latest "$_hk_tmp/py"
fi
echo "kubernetes: images in containerd: $(_hk_ctr images ls -q | grep -c '^localhost/')"
