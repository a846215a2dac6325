#!/usr/bin/env bash
# CI's Kubernetes stage, run by .ci/run after the rest: starts the single-node cluster (built once into
# HANGAR_K8S_DIR, default /var/cache/hangar-k8s, and reused by later runs), imports the test images and Hangar's
# own image, runs the Kubernetes tests (they fail, not skip, when the cluster does not answer), Hangar applied with
# `kubectl apply -k` among them, and stops the cluster if this run started it (one already up is left as it was).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f dist/worker/index.js ] || npm run build
source .ci/setup-kubernetes.sh
_stop() { if [ "$HANGAR_K8S_STARTED" = 1 ] && [ "${HANGAR_K8S_KEEP:-0}" != 1 ]; then W="$HANGAR_K8S_DIR" bash .ci/k8s/setup-k8s.sh stop; fi; }
trap _stop EXIT
# Hangar deployed in the cluster (test/kubernetes.deploy.test.ts): its image from deploy/kubernetes/Containerfile,
# built with Podman and imported into containerd as localhost/hangar:ci and :ci-next (under a minute; the pruned
# production node_modules are cached in $HANGAR_K8S_DIR), on the host's PostgreSQL.
.ci/setup-postgres.sh
.ci/hangar-image.sh
export HANGAR_TEST_K8S_HANGAR_IMAGE=localhost/hangar:ci HANGAR_TEST_K8S_HANGAR_IMAGE_NEXT=localhost/hangar:ci-next
export HANGAR_REQUIRE_KUBERNETES=1
npx vitest run test/runtime.kubernetes.test.ts test/kubernetes.e2e.test.ts test/kubernetes.manifest.test.ts
# Alone: its two replicas, a leader change and a rolling update on this 2-core node. Its one failure in CI (a rolling
# update whose new leader removed the workers instead of adopting them) came when it ran beside the files above;
# alone it passed every run here. WorkerRecovery now logs why a worker is not adopted.
npx vitest run test/kubernetes.deploy.test.ts
# Alone, after the rest: its virtual Nodes (bench/fleet/VirtualNodes.ts) would take other files' Pods that any
# node may run (a CPU worker has no node selector), and no kubelet would run them.
npx vitest run test/kubernetes.fleet.test.ts
