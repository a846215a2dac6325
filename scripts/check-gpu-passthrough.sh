#!/usr/bin/env bash
# Checks real GPU passthrough on a GPU host: starts Hangar on its engine with the host's detected GPUs, runs
# nvidia-smi inside a GPU pod and inside a GPU worker's container, and says whether each saw its GPU.
#
#   HANGAR_ENGINE=unix:///run/podman/podman.sock scripts/check-gpu-passthrough.sh
#
# Needs: a built checkout (npm run build), the engine running (docs/containers.md), the NVIDIA driver, and
#   Podman: a CDI spec (`nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`), HANGAR_GPUS=cdi (the default here);
#   Docker: the NVIDIA container toolkit, HANGAR_GPUS=nvidia.
# GPU_IMAGE (default nvidia/cuda:12.4.1-base-ubuntu22.04) must be pullable or present; it runs the pod.
# Exit 0 when both saw a GPU, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${HANGAR_ENGINE:?set HANGAR_ENGINE to the engine address, e.g. unix:///run/podman/podman.sock}"
GPUS=${HANGAR_GPUS:-cdi}
GPU_IMAGE=${GPU_IMAGE:-nvidia/cuda:12.4.1-base-ubuntu22.04}
PORT=${PORT:-18787}
KEY=hk_gpu_check_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
DATA=$(mktemp -d /tmp/hangar-gpu-check.XXXXXX)
command -v nvidia-smi >/dev/null && nvidia-smi -L || { echo "nvidia-smi is not on this host: no NVIDIA driver?" >&2; exit 1; }
ADDRESS=${HANGAR_ENGINE}
case "$ADDRESS" in '{'*) ADDRESS=$(node -pe 'JSON.parse(process.argv[1]).address' "$ADDRESS") ;; esac
HANGAR_ENGINE="{\"address\":\"$ADDRESS\",\"gpus\":\"$GPUS\"}" HANGAR_ADMIN_API_KEY=$KEY HANGAR_LOG_LEVEL=warn \
  node bin/hangar.js serve --port "$PORT" --data-dir "$DATA" >"$DATA/serve.log" 2>&1 &
SERVE=$!
trap 'kill $SERVE 2>/dev/null; wait $SERVE 2>/dev/null; rm -rf "$DATA"' EXIT
URL=http://127.0.0.1:$PORT
for _ in $(seq 100); do curl -sf "$URL/health" >/dev/null 2>&1 && break; grep -q 'listening on' "$DATA/serve.log" && break; sleep 0.2; done
api() { curl -sS -H "Authorization: Bearer $KEY" -H 'content-type: application/json' "$@"; }
json() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const v=JSON.parse(s);console.log(eval(process.argv[1]))})' "$1"; }
GPU=$(api "$URL/v2/catalog/gpus?include=AVAILABILITY" | json 'JSON.stringify(v.gpus.find(g => g.stock?.total > 0) ?? v.gpus[0])')
GPU_TYPE=$(json 'v.id' <<<"$GPU")
GPU_POOL=$(json 'v.pool' <<<"$GPU")
echo "GPU type: $GPU_TYPE (pool $GPU_POOL)"
ok=0

# 1. A pod: nvidia-smi -L in its log.
POD=$(api "$URL/v2/pods" -d "{\"name\":\"gpu-check\",\"image\":\"$GPU_IMAGE\",\"gpu\":{\"id\":\"$GPU_TYPE\",\"count\":1},\"cmd\":[\"sh\",\"-c\",\"nvidia-smi -L; sleep 600\"]}" | json 'v.id')
for _ in $(seq 300); do
  STATUS=$(api "$URL/v2/pods/$POD" | json 'v.status')
  [ "$STATUS" = RUNNING ] || [ "$STATUS" = ERROR ] && break; sleep 1
done
sleep 3
LOG=$(timeout 5 curl -sN -H "Authorization: Bearer $KEY" "$URL/v2/pods/$POD/logs?tail=200" || true)
if grep -q 'GPU 0:' <<<"$LOG"; then echo "pod: ok, $(grep -o 'GPU 0:[^"]*' <<<"$LOG" | head -1)"; else echo "pod: FAILED (status $STATUS)"; grep -o '"line":"[^"]*"' <<<"$LOG" | tail -5; ok=1; fi
api -X DELETE "$URL/v2/pods/$POD" >/dev/null

# 2. A worker: the sample echo worker on a GPU, then nvidia-smi -L run inside its container (exec through the engine).
EP=$(api "$URL/v2/serverless" -d "{\"name\":\"gpu-check\",\"type\":\"QUEUE\",\"templateId\":\"hangar-echo\",\"gpu\":{\"pools\":[\"$GPU_POOL\"],\"count\":1},\"workers\":{\"min\":1,\"max\":1,\"idleTimeout\":60},\"scaling\":{\"type\":\"QUEUE_DELAY\",\"queueDelay\":1}}" | json 'v.id')
api "$URL/v2/$EP/runsync?wait=120000" -d '{"input":{"gpu":"check"}}' >/dev/null || true
WORKER=$(api "$URL/v2/serverless/$EP/workers" | json 'v.workers[0]?.id ?? ""')
if command -v podman >/dev/null; then OUT=$(podman --url "$ADDRESS" exec "hangar-worker-$WORKER" nvidia-smi -L 2>&1 || true)
else OUT=$(DOCKER_HOST=$ADDRESS docker exec "hangar-worker-$WORKER" nvidia-smi -L 2>&1 || true); fi
if grep -q 'GPU 0:' <<<"$OUT"; then echo "worker $WORKER: ok, $(head -1 <<<"$OUT")"; else echo "worker $WORKER: FAILED: $OUT"; ok=1; fi
api -X DELETE "$URL/v2/serverless/$EP" >/dev/null
exit $ok
