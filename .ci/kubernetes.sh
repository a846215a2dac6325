#!/usr/bin/env bash
# CI's Kubernetes stage, run by .ci/run after the rest: starts the single-node cluster (built once into
# HANGAR_K8S_DIR, default /var/cache/hangar-k8s, and reused by later runs), imports the test images, runs the
# Kubernetes tests (they fail, not skip, when the cluster does not answer), and stops the cluster if this run
# started it (a cluster that was already up is left as it was).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f dist/worker/index.js ] || npm run build
source .ci/setup-kubernetes.sh
_stop() { if [ "$HANGAR_K8S_STARTED" = 1 ] && [ "${HANGAR_K8S_KEEP:-0}" != 1 ]; then W="$HANGAR_K8S_DIR" bash .ci/k8s/setup-k8s.sh stop; fi; }
trap _stop EXIT
export HANGAR_REQUIRE_KUBERNETES=1
npx vitest run test/runtime.kubernetes.test.ts test/kubernetes.e2e.test.ts test/kubernetes.manifest.test.ts
