# Sourced by .ci/run (and usable by hand: `source .ci/setup-podman.sh`): installs Podman, starts its
# Docker-compatible API on a socket, builds the container test images once, and exports what the tests read:
#   HANGAR_TEST_DOCKER_HOST     unix socket of engine A (the contract suite, end-to-end tests, the benchmark)
#   HANGAR_TEST_PODMAN_ROOT_B   storage of engine B (the same images), which the two-host test starts and kills itself
#   HANGAR_TEST_CGROUP_PARENT   cgroup that keeps containers inside this run's own
#   CONTAINERS_CONF             the settings this machine needs (written by the steps in docs/containers.md)
#   CONTAINERS_REGISTRIES_CONF  registries on 127.0.0.1 over HTTP (.ci/registries.conf), for pull tests
# Images: localhost/hangar-test-bb (busybox) and localhost/hangar-test-worker (busybox + node + the worker SDK,
# running test/fixtures/container-worker.mjs). Engines are stopped when the calling shell exits.
_hangar_ci_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_hangar_root_dir=$(cd "$_hangar_ci_dir/.." && pwd)
# The steps of docs/containers.md (install, settings, the API service, the engine check), run from its text.
source "$_hangar_ci_dir/readme-steps.sh"

if ! command -v podman >/dev/null || ! command -v runc >/dev/null || [ ! -x /usr/libexec/podman/catatonit ]; then
  hangar_readme_steps containers-install >/dev/null
fi
# The tests' own images are built from busybox.
if [ ! -x /bin/busybox ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null
fi
# Test registries on 127.0.0.1 speak plain HTTP.
export CONTAINERS_REGISTRIES_CONF="$_hangar_ci_dir/registries.conf"

HANGAR_PODMAN_RUN=${HANGAR_PODMAN_RUN:-$(mktemp -d /tmp/hangar-podman.XXXXXX)}
_hangar_podman() { podman --root "$HANGAR_PODMAN_RUN/$1/storage" --runroot "$HANGAR_PODMAN_RUN/$1/run" "${@:2}"; }

# Engine A serves the API for the whole run, started by the steps of docs/containers.md with the socket, settings and
# storage in this run's folder.
mkdir -p "$HANGAR_PODMAN_RUN/a"
PODMAN_SOCK_DIR="$HANGAR_PODMAN_RUN/a" HANGAR_CONTAINERS_CONF="$HANGAR_PODMAN_RUN/containers.conf" HANGAR_README_PODMAN_STORAGE="$HANGAR_PODMAN_RUN/a" \
  hangar_readme_steps containers 2>"$HANGAR_PODMAN_RUN/a/steps.log"
_hangar_engine_pid=$!
trap 'kill "$_hangar_engine_pid" 2>/dev/null || true' EXIT
[ -S "$HANGAR_PODMAN_RUN/a/podman.sock" ] || { echo "the container steps of docs/containers.md did not start Podman's API (see $HANGAR_PODMAN_RUN/a/steps.log)" >&2; return 1; }
(cd "$_hangar_root_dir" && [ -f dist/worker/index.js ] || npm run build >/dev/null)
# The check of docs/containers.md: the engine answers, the sample image builds, a container reaches the control plane's URL.
hangar_readme_steps containers-check >"$HANGAR_PODMAN_RUN/a/check.log" 2>&1 || { cat "$HANGAR_PODMAN_RUN/a/check.log" >&2; return 1; }
export HANGAR_TEST_DOCKER_HOST=$HANGAR_ENGINE
# Tests choose per server whether it has an engine.
unset HANGAR_ENGINE

# Test images, built once per run without a registry.
if ! _hangar_podman a image exists localhost/hangar-test-worker:latest; then
  _ctx="$HANGAR_PODMAN_RUN/build"
  rm -rf "$_ctx" && mkdir -p "$_ctx/bb/bin" "$_ctx/bb/etc" "$_ctx/bb/proc" "$_ctx/bb/sys" "$_ctx/bb/dev" "$_ctx/bb/tmp" "$_ctx/bb/workspace"
  cp /bin/busybox "$_ctx/bb/bin/"
  for _applet in $(/bin/busybox --list); do [ -e "$_ctx/bb/bin/$_applet" ] || ln -s busybox "$_ctx/bb/bin/$_applet"; done
  echo 'root:x:0:0:root:/root:/bin/sh' >"$_ctx/bb/etc/passwd"
  tar -C "$_ctx/bb" -cf "$_ctx/bb.tar" .
  _hangar_podman a import -q "$_ctx/bb.tar" localhost/hangar-test-bb:latest >/dev/null
  # Node with the shared libraries it links (busybox has no libc), the built SDK and a worker program.
  mkdir -p "$_ctx/worker/rootfs/usr/bin" "$_ctx/worker/rootfs/app"
  cp "$(command -v node)" "$_ctx/worker/rootfs/usr/bin/node"
  for _lib in $(ldd "$(command -v node)" | grep -o '/[^ ]*'); do mkdir -p "$_ctx/worker/rootfs$(dirname "$_lib")"; cp -L "$_lib" "$_ctx/worker/rootfs$_lib"; done
  cp -r "$_hangar_root_dir/dist/worker" "$_ctx/worker/rootfs/app/worker"
  cp "$_hangar_root_dir/test/fixtures/container-worker.mjs" "$_ctx/worker/rootfs/app/worker.mjs"
  echo '{"type":"module"}' >"$_ctx/worker/rootfs/app/package.json"
  printf 'FROM localhost/hangar-test-bb:latest\nCOPY rootfs/ /\nWORKDIR /app\nCMD ["node", "/app/worker.mjs"]\n' >"$_ctx/worker/Containerfile"
  _hangar_podman a build -q --pull=never -t localhost/hangar-test-worker:latest -f "$_ctx/worker/Containerfile" "$_ctx/worker" >/dev/null
  # Engine B gets the same images (its service is started by the test that needs it).
  mkdir -p "$HANGAR_PODMAN_RUN/b"
  _hangar_podman a save -q -m -o "$_ctx/images.tar" localhost/hangar-test-bb:latest localhost/hangar-test-worker:latest
  _hangar_podman b load -q -i "$_ctx/images.tar" >/dev/null
  rm -rf "$_ctx"
fi

export HANGAR_TEST_PODMAN_ROOT_B="$HANGAR_PODMAN_RUN/b"
export HANGAR_TEST_CGROUP_PARENT="$(awk -F: '$2=="memory"{print $3}' /proc/self/cgroup)/podman"
export HANGAR_PODMAN_RUN
