import { Type, type Static, type TSchema } from 'typebox'
import { DateTime } from './common.js'
import { JobStatus } from './job.js'
import { MAX_DONE_BATCH } from './workerLimits.js'

/**
 * The spec's five statuses, plus PARKED (FlashBoot: the process is kept, takes no job, is not counted),
 * which appears only in the `parked` list, so the five summary counts still add up to `total`.
 */
export const WorkerStatus = Type.Enum(['RUNNING', 'IDLE', 'INITIALIZING', 'THROTTLED', 'UNHEALTHY', 'PARKED'])
export type WorkerStatus = Static<typeof WorkerStatus>

const Nullable = <T extends TSchema>(t: T, description?: string) =>
  Type.Union([t, Type.Null()], description ? { description } : {})

/** A serverless worker of an endpoint, as listed by GET /v2/serverless/{id}/workers. */
export const Worker = Type.Object({
  id: Type.String(),
  status: WorkerStatus,
  isStale: Type.Boolean({ description: 'runs an older release than the endpoint version' }),
  gpuCount: Type.Integer(),
  version: Nullable(Type.Integer()),
  image: Nullable(Type.String()),
  uptimeSeconds: Nullable(Type.Integer()),
  gpuTypeId: Nullable(Type.String()),
  dataCenterId: Nullable(Type.String()),
  startedAt: Nullable(DateTime),
  cpuFlavorId: Nullable(Type.String(), 'CPU flavor of a CPU worker'),
  vcpuCount: Nullable(Type.Integer()),
  hostId: Nullable(Type.String(), 'the fleet host it was placed on'),
  runtime: Nullable(
    Type.String(),
    "what runs it: `process` (a local process) or `docker` (a container of the host's Docker/Podman engine)",
  ),
  startPhase: Nullable(
    Type.Enum(['PULLING', 'CREATING', 'STARTING']),
    'INITIALIZING: pulling the image, creating the container, or started and not yet called in',
  ),
  pull: Nullable(
    Type.Object({ bytes: Type.Integer(), totalBytes: Nullable(Type.Integer()) }),
    'PULLING: image bytes downloaded so far',
  ),
  coldStart: Nullable(
    Type.Object({
      pullMs: Type.Integer({ description: 'getting the image (0 when the host had it)' }),
      createMs: Type.Integer({ description: 'creating and starting the container or process' }),
      bootMs: Nullable(
        Type.Integer({ description: 'from started to its first call to the control plane; null until then' }),
      ),
    }),
    'how its start was spent; null for adopted or never-started workers',
  ),
  cudaVersion: Nullable(Type.String(), "CUDA version of the host's GPUs"),
  jobsInProgress: Type.Integer(),
  jobsDone: Type.Integer({ description: 'jobs that ended on this worker, whatever the outcome' }),
  retiring: Type.Boolean({
    description: 'stops once its running jobs end (older release, or it asked to be replaced)',
  }),
  lastError: Nullable(
    Type.String(),
    'THROTTLED: why it cannot be placed; UNHEALTHY: how it failed; INITIALIZING: why a started worker has not called in after 10 s',
  ),
  nextStartAt: Nullable(DateTime, 'UNHEALTHY: when the crash back-off allows a replacement'),
  parkedUntil: Nullable(DateTime, 'PARKED: when it is stopped unless a scale-up reuses it first'),
  health: Type.Optional(
    Type.Enum(['INITIALIZING', 'READY', 'UNHEALTHY'], {
      description:
        'LOAD_BALANCER workers: the last health check (200 READY, 204 INITIALIZING, else UNHEALTHY); only READY workers get requests',
    }),
  ),
})
export type Worker = Static<typeof Worker>

export const WaitingReasonCode = Type.Enum([
  'WORKER_DROPS_JOBS',
  'NO_CAPACITY',
  'MAX_REACHED',
  'CRASH_LOOP',
  'COLD_START',
  'QUEUE_DELAY',
  'ROLLOUT',
  'LOW_PRIORITY',
  'QUOTA',
])
export type WaitingReasonCode = Static<typeof WaitingReasonCode>

/** Why waiting jobs are not running. */
export const WaitingReason = Type.Object({ code: WaitingReasonCode, message: Type.String() })
export type WaitingReason = Static<typeof WaitingReason>

export const WorkerList = Type.Object({
  workers: Type.Array(Worker, { description: 'active workers (never PARKED)' }),
  parked: Type.Array(Worker, {
    description: 'FlashBoot: stopped-by-scale-down workers kept warm; not counted in summary.total',
  }),
  summary: Type.Object({
    running: Type.Integer(),
    idle: Type.Integer(),
    initializing: Type.Integer(),
    throttled: Type.Integer(),
    unhealthy: Type.Integer(),
    total: Type.Integer({ description: 'workers.length: the five counts above add up to it' }),
    parked: Type.Integer(),
  }),
  endpointVersion: Nullable(Type.Integer()),
  waiting: Type.Object({
    jobs: Type.Integer({ description: 'waiting normal-priority jobs' }),
    lowPriorityJobs: Type.Integer(),
    reason: Nullable(WaitingReason, 'why they are not running; null when a worker is about to take them'),
  }),
})
export type WorkerList = Static<typeof WorkerList>

// The worker protocol: what the Python `runpod` SDK and Hangar's worker SDK (src/worker/) exchange with
// the control plane under /v2/{endpointId}/job-take/{workerId} and its siblings.

export const WorkerParams = Type.Object({ endpointId: Type.String(), workerId: Type.String() })
export const WorkerJobParams = Type.Object({ endpointId: Type.String(), workerId: Type.String(), jobId: Type.String() })
export const WorkerTakeBatchQuery = Type.Object({
  batch_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
})
export const WorkerPingQuery = Type.Object({
  job_id: Type.Optional(
    Type.String({
      maxLength: 1_000_000,
      description: 'comma-separated ids of the jobs the worker runs; absent when idle',
    }),
  ),
})
export const WorkerDoneQuery = Type.Object({
  isStream: Type.Optional(Type.String({ description: '"true" when chunks were posted to job-stream before' })),
})

/** What a worker receives from job-take (job-take-batch: an array of them); the whole object is handed to its handler. */
export const WorkerJob = Type.Object({
  id: Type.String(),
  input: Type.Unknown({ description: 'the input as submitted, byte for byte' }),
  webhook: Type.Optional(Type.String()),
  policy: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: 'the execution policy as submitted' }),
  ),
  s3Config: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), { description: 'the S3 settings as submitted, the secret readable' }),
  ),
})
export type WorkerJob = Static<typeof WorkerJob>

export const WorkerJobBatch = Type.Array(WorkerJob)
export type WorkerJobBatch = Static<typeof WorkerJobBatch>

/** job-stop: running jobs the worker must stop (cancelled, timed out, expired). */
export const WorkerJobsToStop = Type.Object({ jobsToStop: Type.Array(Type.String()) })
export type WorkerJobsToStop = Static<typeof WorkerJobsToStop>

/**
 * What a worker posts to job-done (the Python SDK's shapes; sent as JSON text under any content type, so
 * the route reads it itself): `status: "IN_PROGRESS"` is a progress update, an `error` fails the job,
 * anything else completes it with `output`; `stopPod: true` has the worker replaced once its jobs end.
 */
export const WorkerDoneBody = Type.Object({
  output: Type.Optional(Type.Unknown()),
  error: Type.Optional(Type.Unknown()),
  status: Type.Optional(Type.Unknown()),
  stopPod: Type.Optional(Type.Unknown()),
})
export type WorkerDoneBody = Static<typeof WorkerDoneBody>

/** job-stream's body: one chunk of a streaming handler's output. */
export const WorkerStreamBody = Type.Object({ output: Type.Unknown() })
export type WorkerStreamBody = Static<typeof WorkerStreamBody>

/** job-done and job-stream: whether the post was applied; one for a job no longer running there is ignored. */
export const WorkerPostReply = Type.Object({
  accepted: Type.Boolean(),
  status: Type.Optional(JobStatus),
})
export type WorkerPostReply = Static<typeof WorkerPostReply>

export { MAX_DONE_BATCH } from './workerLimits.js'

/**
 * One result in a job-done-batch body (Hangar's extension; the Python SDK never sends it): a job-done body
 * with its job's `id`, and `isStream` as job-done's query parameter. Each item means exactly what job-done
 * with that body means.
 */
export const WorkerDoneBatchItem = Type.Object({
  id: Type.String({ minLength: 1, description: 'the job id' }),
  output: Type.Optional(Type.Unknown()),
  error: Type.Optional(Type.Unknown()),
  status: Type.Optional(Type.Unknown({ description: '"IN_PROGRESS": a progress update' })),
  stopPod: Type.Optional(Type.Unknown()),
  isStream: Type.Optional(Type.Boolean({ description: 'true when chunks were posted to job-stream before' })),
})
export type WorkerDoneBatchItem = Static<typeof WorkerDoneBatchItem>

/**
 * What a worker posts to job-done-batch: several results at once, each job at most once, sent as JSON text
 * under any content type (the route reads it itself, like job-done).
 */
export const WorkerDoneBatchBody = Type.Array(WorkerDoneBatchItem, { maxItems: MAX_DONE_BATCH })
export type WorkerDoneBatchBody = Static<typeof WorkerDoneBatchBody>

/** job-done-batch: what became of each result, in the body's order (as job-done's reply, with the job id). */
export const WorkerDoneBatchReply = Type.Object({
  results: Type.Array(
    Type.Object({
      id: Type.String(),
      accepted: Type.Boolean({ description: 'false: ignored, the job is no longer running on this worker' }),
      status: Type.Optional(JobStatus),
    }),
  ),
})
export type WorkerDoneBatchReply = Static<typeof WorkerDoneBatchReply>

/** ping: an empty object. */
export const WorkerPingReply = Type.Object({})
