import type { Allocation } from '../catalog/Fleet.js'
import type { EndpointRecord } from '../domain/endpoints/endpoint.js'
import { LABELS } from './labels.js'
import type { WorkloadMount, WorkloadPort, WorkloadSpec } from './RuntimeDriver.js'

/** Everything a worker's workload is made of. */
export interface WorkerSpecInput {
  endpoint: Pick<
    EndpointRecord,
    'id' | 'accountId' | 'version' | 'image' | 'entrypoint' | 'cmd' | 'env' | 'disk' | 'ports'
  >
  workerId: string
  /** The worker's own protocol key (RUNPOD_AI_API_KEY). */
  token: string
  /** Base URL of the control plane as the worker reaches it. */
  baseUrl: string
  /** Id of this Hangar installation (labels). */
  installationId: string
  pingIntervalMs: number
  allocation: Allocation
  /** The endpoint's network volume directory on the host, if it has one. */
  volumePath: string | null
  pullAuth?: WorkloadSpec['pullAuth']
}

/** Where a network volume appears inside a worker's container, as on the hosted platform. */
export const VOLUME_TARGET = '/runpod-volume'

/**
 * The workload of a serverless worker: the endpoint's image, command and env, then the protocol variables
 * the worker SDKs read (the endpoint cannot override those). How an image runs (a container, or a local
 * command from the images map) is the runtime's business.
 */
export function buildWorkerSpec(i: WorkerSpecInput): WorkloadSpec {
  const ep = encodeURIComponent(i.endpoint.id)
  const wid = encodeURIComponent(i.workerId)
  const q = `?gpu=${encodeURIComponent(i.allocation.gpuTypeId ?? 'CPU')}`
  const base = `${i.baseUrl.replace(/\/+$/, '')}/v2/${ep}`
  const protocol: Record<string, string> = {
    // The worker id is written into every URL and `?` is already there: the Python SDK appends with `&`
    // and substitutes only `$ID` (the job id).
    RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/${wid}${q}`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/${wid}/$ID${q}`,
    RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/${wid}/$ID${q}`,
    RUNPOD_WEBHOOK_PING: `${base}/ping/${wid}${q}`,
    // Hangar's extension, read by its TypeScript SDK only: several results in one request (job-done-batch).
    HANGAR_WEBHOOK_POST_OUTPUT_BATCH: `${base}/job-done-batch/${wid}${q}`,
    RUNPOD_AI_API_KEY: i.token,
    RUNPOD_POD_ID: i.workerId,
    RUNPOD_ENDPOINT_ID: i.endpoint.id,
    RUNPOD_PING_INTERVAL: String(i.pingIntervalMs),
    // Hosts may have no internet; the Python SDK exits at start when its probe fails.
    RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
    RUNPOD_GPU_COUNT: String(i.allocation.gpuIndices.length),
  }
  const mounts: WorkloadMount[] = [{ kind: 'disk', target: '/workspace', sizeGb: i.endpoint.disk }]
  if (i.volumePath) mounts.push({ kind: 'volume', source: i.volumePath, target: VOLUME_TARGET })
  return {
    id: i.workerId,
    kind: 'worker',
    hostId: i.allocation.hostId,
    labels: {
      [LABELS.installation]: i.installationId,
      [LABELS.kind]: 'worker',
      [LABELS.id]: i.workerId,
      [LABELS.endpoint]: i.endpoint.id,
      [LABELS.account]: i.endpoint.accountId,
      [LABELS.release]: String(i.endpoint.version),
      [LABELS.controlPlane]: i.baseUrl,
      [LABELS.allocation]: JSON.stringify(i.allocation),
    },
    image: i.endpoint.image,
    entrypoint: i.endpoint.entrypoint,
    cmd: i.endpoint.cmd,
    env: { ...i.endpoint.env, ...protocol },
    gpus: { ids: i.allocation.gpuIndices.map(String), virtual: i.allocation.virtual },
    resources: { vcpus: i.allocation.vcpus, memoryGb: i.allocation.memoryGb },
    mounts,
    ports: parsePorts(i.endpoint.ports),
    pullAuth: i.pullAuth ?? null,
  }
}

/** `8000/http` -> `{ port: 8000, protocol: 'http' }`; UDP ports are not published (no runtime here maps them). */
export function parsePorts(ports: string[]): WorkloadPort[] {
  const out: WorkloadPort[] = []
  for (const p of ports) {
    const [port, protocol] = p.split('/')
    if (protocol === 'http' || protocol === 'tcp') out.push({ port: Number(port), protocol })
  }
  return out
}
