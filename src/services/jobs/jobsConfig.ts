import { Type, type Static } from 'typebox'

export const JobsConfig = Type.Object(
  {
    webhookRetryDelayMs: Type.Integer({
      minimum: 0,
      default: 10_000,
      description: "Pause between webhook attempts (the spec's 10 s; shorter in tests).",
    }),
    webhookSecretOverlapMs: Type.Integer({
      minimum: 0,
      default: 86_400_000,
      description:
        'After a webhook secret is rotated, the old secret keeps signing beside the new one this long, so that receivers can switch over (Standard Webhooks: several signatures, space-separated).',
    }),
    idempotencyWindowMs: Type.Integer({
      minimum: 1_000,
      default: 86_400_000,
      description:
        "How long an Idempotency-Key of /run and /runsync names its job (also after the job's result is gone).",
    }),
    webhookTimeoutMs: Type.Integer({
      minimum: 100,
      default: 10_000,
      description: 'How long one webhook attempt may take.',
    }),
    sweepIntervalMs: Type.Integer({
      minimum: 10,
      default: 1_000,
      description: 'How often deadlines (TTL, execution timeout, retention, worker heartbeats) are checked.',
    }),
    takeWaitMs: Type.Integer({
      minimum: 0,
      maximum: 80_000,
      default: 30_000,
      description:
        "How long job-take and job-stop hold a request open before answering 204 (the SDK's client timeout is 90 s).",
    }),
    streamWaitMs: Type.Integer({
      minimum: 0,
      maximum: 300_000,
      default: 10_000,
      description: 'How long /stream holds a request while there is no new chunk, unless `?wait=` says otherwise.',
    }),
    pingIntervalMs: Type.Integer({
      minimum: 100,
      default: 10_000,
      description: 'Heartbeat interval given to workers (RUNPOD_PING_INTERVAL).',
    }),
    missedPings: Type.Integer({
      minimum: 2,
      default: 3,
      description: 'A worker silent for this many intervals is lost: its jobs go back to the queue.',
    }),
    workerStartTimeoutMs: Type.Integer({
      minimum: 1_000,
      default: 120_000,
      description:
        'A started worker that has not called in (first job-take or ping) after this long is stopped as failed and replaced after the crash back-off. Generous: real images may load a model before they start polling.',
    }),
    crashBackoffMs: Type.Integer({
      minimum: 0,
      default: 1_000,
      description:
        'Crash back-off: the pause before replacing a failed worker, doubling per consecutive failure up to `crashBackoffMaxMs`.',
    }),
    crashBackoffMaxMs: Type.Integer({
      minimum: 0,
      default: 60_000,
      description: 'The longest crash back-off (see `crashBackoffMs`).',
    }),
    healthyAfterMs: Type.Integer({
      minimum: 0,
      default: 30_000,
      description:
        "A worker counts as healthy (resetting the endpoint's failure count) once it ends a job or stays up this long.",
    }),
    flashbootWindowMs: Type.Integer({
      minimum: 0,
      default: 60_000,
      description: 'FlashBoot: how long a scaled-down worker stays parked (process and capacity kept) for reuse.',
    }),
    priorityFlashbootWindowMs: Type.Integer({
      minimum: 0,
      default: 600_000,
      description:
        'PRIORITY_FLASHBOOT: the longer parking window; these are also the last parked workers evicted for capacity.',
    }),
    stopGraceMs: Type.Integer({
      minimum: 0,
      default: 5_000,
      description: 'Between SIGTERM and SIGKILL when stopping a worker.',
    }),
    scaleIntervalMs: Type.Integer({
      minimum: 10,
      default: 250,
      description: 'Scaling decisions run this often, and on every submission.',
    }),
    requestCountIdleTimeoutMs: Type.Integer({
      minimum: 0,
      default: 5_000,
      description:
        'Idle time before stopping a worker of a QUEUE endpoint scaled on REQUEST_COUNT, which has no workers.idleTimeout of its own: the scale-down cool-down of those endpoints.',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description: 'Timings of the job queue, workers and webhooks; defaults follow the spec and the worker SDKs.',
  },
)
export type JobsConfig = Static<typeof JobsConfig>
