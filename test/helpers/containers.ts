/**
 * Where container tests find their engine: `.ci/setup-podman.sh` starts Podman's Docker-compatible API and
 * exports these. Without HANGAR_TEST_DOCKER_HOST (a machine without Podman) container tests skip, saying so.
 */
export const containerEnv = {
  /** `unix://...` socket of the test engine. */
  dockerHost: process.env.HANGAR_TEST_DOCKER_HOST,
  /** Storage of a second engine with the same images, for tests that start (and kill) one themselves. */
  podmanRootB: process.env.HANGAR_TEST_PODMAN_ROOT_B,
  cgroupParent: process.env.HANGAR_TEST_CGROUP_PARENT,
  /** busybox. */
  bbImage: 'localhost/hangar-test-bb:latest',
  /** busybox + node + the worker SDK running test/fixtures/container-worker.mjs. */
  workerImage: 'localhost/hangar-test-worker:latest',
}

/** Why container tests skip here, or null when they run. */
export function containerSkipReason(): string | null {
  return containerEnv.dockerHost
    ? null
    : 'HANGAR_TEST_DOCKER_HOST is not set (run `source .ci/setup-podman.sh` first): container tests skipped'
}
