import { join } from 'node:path'
import type { Allocation } from '../catalog/Fleet.js'
import type { EndpointRecord } from '../domain/endpoint.js'
import { resolveImage, type ImagesConfig } from './images.js'
import type { WorkerSpec } from './RuntimeDriver.js'

/** Everything a worker's command and environment are made of. */
export interface WorkerSpecInput {
  endpoint: Pick<EndpointRecord, 'id' | 'image' | 'entrypoint' | 'cmd' | 'env'>
  workerId: string
  /** The worker's own protocol key (RUNPOD_AI_API_KEY). */
  token: string
  /** Base URL of the control plane as the worker reaches it. */
  baseUrl: string
  images: ImagesConfig
  dataDir: string
  pingIntervalMs: number
  allocation: Allocation
  /** The endpoint's network volume directory, if it has one. */
  volumePath: string | null
  /** Host variables a local process needs (PATH, HOME, ...). */
  hostEnv: Record<string, string>
}

/**
 * The command and environment of a worker. The endpoint's own entrypoint/cmd win; otherwise the image's
 * mapped command. Env, later wins: host basics, image env, endpoint env, then the protocol variables the
 * worker SDKs read (the endpoint cannot override those).
 */
export function buildWorkerSpec(i: WorkerSpecInput): WorkerSpec | { error: string } {
  const own = [...i.endpoint.entrypoint, ...i.endpoint.cmd]
  const mapping = resolveImage(i.endpoint.image, i.images)
  const command = own.length > 0 ? own : mapping?.command
  if (!command) {
    return { error: `image ${JSON.stringify(i.endpoint.image)} has no local command: set the endpoint's entrypoint/cmd, or map the image in the "images" configuration` }
  }
  const ep = encodeURIComponent(i.endpoint.id)
  const wid = encodeURIComponent(i.workerId)
  const q = `?gpu=${encodeURIComponent(i.allocation.gpuTypeId ?? 'CPU')}`
  const base = `${i.baseUrl.replace(/\/+$/, '')}/v2/${ep}`
  const workDir = join(i.dataDir, 'workers', i.workerId, 'disk')
  const protocol: Record<string, string> = {
    // The worker id is written into every URL and `?` is already there: the Python SDK appends with `&`
    // and substitutes only `$ID` (the job id).
    RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/${wid}${q}`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/${wid}/$ID${q}`,
    RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/${wid}/$ID${q}`,
    RUNPOD_WEBHOOK_PING: `${base}/ping/${wid}${q}`,
    RUNPOD_AI_API_KEY: i.token,
    RUNPOD_POD_ID: i.workerId,
    RUNPOD_ENDPOINT_ID: i.endpoint.id,
    RUNPOD_PING_INTERVAL: String(i.pingIntervalMs),
    // Hosts may have no internet; the Python SDK exits at start when its probe fails.
    RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
    RUNPOD_GPU_COUNT: String(i.allocation.gpuIndices.length),
    HANGAR_WORKER_DISK: workDir,
  }
  if (i.allocation.gpuTypeId && !i.allocation.virtual) protocol.CUDA_VISIBLE_DEVICES = i.allocation.gpuIndices.join(',')
  else if (!i.allocation.gpuTypeId) protocol.CUDA_VISIBLE_DEVICES = ''
  if (i.volumePath) protocol.HANGAR_VOLUME_PATH = i.volumePath
  return {
    workerId: i.workerId,
    command,
    env: { ...i.hostEnv, HOME: workDir, ...(own.length > 0 ? {} : (mapping?.env ?? {})), ...i.endpoint.env, ...protocol },
    workDir,
    logFile: join(i.dataDir, 'workers', i.workerId, 'worker.log'),
  }
}
