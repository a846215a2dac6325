import { Type, type Static } from 'typebox'

/** Timings of the job queue, workers and webhooks; defaults follow the spec and the worker SDKs. */
export const JobsConfig = Type.Object(
  {
    /** Pause between webhook attempts (the spec's 10 s; shorter in tests). */
    webhookRetryDelayMs: Type.Integer({ minimum: 0, default: 10_000 }),
    /**
     * After a webhook secret is rotated, the old secret keeps signing beside the new one this long, so that
     * receivers can switch over (Standard Webhooks: several signatures, space-separated).
     */
    webhookSecretOverlapMs: Type.Integer({ minimum: 0, default: 86_400_000 }),
    /** How long an Idempotency-Key of /run and /runsync names its job (also after the job's result is gone). */
    idempotencyWindowMs: Type.Integer({ minimum: 1_000, default: 86_400_000 }),
    /** How long one webhook attempt may take. */
    webhookTimeoutMs: Type.Integer({ minimum: 100, default: 10_000 }),
    /** How often deadlines (TTL, execution timeout, retention, worker heartbeats) are checked. */
    sweepIntervalMs: Type.Integer({ minimum: 10, default: 1_000 }),
    /** How long job-take and job-stop hold a request open before answering 204 (the SDK's client timeout is 90 s). */
    takeWaitMs: Type.Integer({ minimum: 0, maximum: 80_000, default: 30_000 }),
    /** How long /stream holds a request while there is no new chunk, unless `?wait=` says otherwise. */
    streamWaitMs: Type.Integer({ minimum: 0, maximum: 300_000, default: 10_000 }),
    /** Heartbeat interval given to workers (RUNPOD_PING_INTERVAL). */
    pingIntervalMs: Type.Integer({ minimum: 100, default: 10_000 }),
    /** A worker silent for this many intervals is lost: its jobs go back to the queue. */
    missedPings: Type.Integer({ minimum: 2, default: 3 }),
    /**
     * A started worker that has not called in (first job-take or ping) after this long is stopped as
     * failed and replaced after the crash back-off. Generous: real images may load a model before they
     * start polling.
     */
    workerStartTimeoutMs: Type.Integer({ minimum: 1_000, default: 120_000 }),
    /** Crash back-off: the pause before replacing a failed worker doubles per consecutive failure from this... */
    crashBackoffMs: Type.Integer({ minimum: 0, default: 1_000 }),
    /** ...up to this. */
    crashBackoffMaxMs: Type.Integer({ minimum: 0, default: 60_000 }),
    /** A worker counts as healthy (resetting the endpoint's failure count) once it ends a job or stays up this long. */
    healthyAfterMs: Type.Integer({ minimum: 0, default: 30_000 }),
    /** FlashBoot: how long a scaled-down worker stays parked (process and capacity kept) for reuse. */
    flashbootWindowMs: Type.Integer({ minimum: 0, default: 60_000 }),
    /** PRIORITY_FLASHBOOT: the longer parking window; these are also the last parked workers evicted for capacity. */
    priorityFlashbootWindowMs: Type.Integer({ minimum: 0, default: 600_000 }),
    /** Between SIGTERM and SIGKILL when stopping a worker. */
    stopGraceMs: Type.Integer({ minimum: 0, default: 5_000 }),
    /** Scaling decisions run this often, and on every submission. */
    scaleIntervalMs: Type.Integer({ minimum: 10, default: 250 }),
    /**
     * Idle time before stopping a worker of a QUEUE endpoint scaled on REQUEST_COUNT, which has no
     * workers.idleTimeout of its own: the scale-down cool-down of those endpoints.
     */
    requestCountIdleTimeoutMs: Type.Integer({ minimum: 0, default: 5_000 }),
  },
  { additionalProperties: false, default: {} },
)
export type JobsConfig = Static<typeof JobsConfig>
