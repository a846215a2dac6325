import { Type, type Static } from 'typebox'
import { Closed, DateTime } from './common.js'

export const JobStatus = Type.Enum(['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'])
export type JobStatus = Static<typeof JobStatus>

const SEVEN_DAYS_MS = 7 * 24 * 3_600_000

export const ExecutionPolicy = Closed({
  executionTimeout: Type.Optional(
    Type.Integer({
      minimum: 5_000,
      maximum: SEVEN_DAYS_MS,
      description:
        'ms a job may run once a worker picks it up; default: the endpoint timeout (600000 when it has none)',
    }),
  ),
  lowPriority: Type.Optional(Type.Boolean({ description: 'when true the job does not trigger worker scaling' })),
  ttl: Type.Optional(
    Type.Integer({
      minimum: 10_000,
      maximum: SEVEN_DAYS_MS,
      description: 'total lifespan from submission, ms, a hard limit; default 86400000',
    }),
  ),
})
export type ExecutionPolicy = Static<typeof ExecutionPolicy>

export const S3Config = Closed({
  accessId: Type.String(),
  accessSecret: Type.String(),
  bucketName: Type.String(),
  endpointUrl: Type.String(),
  // runpod-sdk declares it in its S3Config type, so its users may send it.
  objectPath: Type.Optional(Type.String()),
})
export type S3Config = Static<typeof S3Config>

/** Body of `/run` and `/runsync`. */
export const JobRequest = Closed({
  input: Type.Record(Type.String(), Type.Unknown(), { description: "parameters for the worker's handler" }),
  // One rule (uri), so that one mistake is one error; the http(s) scheme is checked by the job service.
  webhook: Type.Optional(
    Type.String({ format: 'uri', description: 'an http or https URL, POSTed the status object when the job ends' }),
  ),
  policy: Type.Optional(ExecutionPolicy),
  s3Config: Type.Optional(S3Config),
})
export type JobRequest = Static<typeof JobRequest>

/** Request headers of /run and /runsync. */
export const SubmitHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      maxLength: 512,
      description:
        'Idempotency-Key (IETF httpapi draft), a quoted or bare string of 1 to 255 printable ASCII characters. Repeating a submission with the same key and body within the retention window (24 h by default) answers with the original job (same id, 200) instead of making another; the same key with another body or operation is 422; a duplicate while the first is still being accepted is 409. Keys are per account and endpoint.',
    }),
  ),
})

export const EndpointJobParams = Type.Object({ endpointId: Type.String({ minLength: 1, maxLength: 128 }) })
export const JobParams = Type.Object({
  endpointId: Type.String({ minLength: 1, maxLength: 128 }),
  jobId: Type.String({ minLength: 1, maxLength: 128 }),
})

export const WaitQuery = Type.Object({
  wait: Type.Optional(Type.Integer({ minimum: 1_000, maximum: 300_000, description: 'ms to wait for a final state' })),
})
export const StreamQuery = Type.Object({
  wait: Type.Optional(
    Type.Integer({
      minimum: 1_000,
      maximum: 300_000,
      description: 'ms to hold the request while no new chunk exists; default 10000',
    }),
  ),
})
export const StatusQuery = Type.Object({
  ttl: Type.Optional(
    Type.Integer({
      minimum: 10_000,
      maximum: SEVEN_DAYS_MS,
      description: "replaces the job's time-to-live, counted from submission, ms",
    }),
  ),
})

/** `/run`, `/cancel`, `/retry` replies. */
export const JobRef = Type.Object({ id: Type.String(), status: JobStatus })
export type JobRef = Static<typeof JobRef>

/** One attempt to deliver a job's webhook. */
export const WebhookAttemptView = Type.Object({
  at: DateTime,
  statusCode: Type.Union([Type.Integer(), Type.Null()], {
    description: "the receiver's HTTP status; null when none came",
  }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'why the attempt failed; null when delivered' }),
  durationMs: Type.Integer(),
})
export type WebhookAttemptView = Static<typeof WebhookAttemptView>

/** A job's webhook delivery (the `webhook-id` its receiver sees) with every attempt. */
export const WebhookDeliveryView = Type.Object({
  id: Type.String({ description: 'the webhook-id header of every attempt' }),
  url: Type.String(),
  state: Type.Enum(['PENDING', 'DELIVERED', 'FAILED']),
  attempts: Type.Array(WebhookAttemptView),
  nextAttemptAt: Type.Union([DateTime, Type.Null()], { description: 'PENDING only: when the next attempt is due' }),
})
export type WebhookDeliveryView = Static<typeof WebhookDeliveryView>

/** `/runsync`, `/status`, `/status-sync` replies. */
export const JobStatusView = Type.Object({
  id: Type.String(),
  status: JobStatus,
  delayTime: Type.Optional(Type.Integer({ description: 'ms from submission to the start of execution' })),
  executionTime: Type.Optional(Type.Integer({ description: 'ms of execution' })),
  output: Type.Optional(
    Type.Unknown({ description: 'worker-defined result; while running, the last progress update' }),
  ),
  error: Type.Optional(Type.String()),
  retries: Type.Optional(Type.Integer({ description: 'times the job went back to the queue after losing its worker' })),
  workerId: Type.Optional(Type.String()),
  waitingReason: Type.Optional(
    Type.String({
      description:
        'IN_QUEUE only: why no worker runs it yet (no capacity, workers.max reached, crash-looping workers, ...)',
    }),
  ),
  webhookDeliveries: Type.Optional(
    Type.Array(WebhookDeliveryView, {
      description:
        'Hangar extension, GET /status of a job submitted with a `webhook` only: its deliveries (one once it ended; none before), each attempt with status, time and error',
    }),
  ),
})
export type JobStatusView = Static<typeof JobStatusView>

export const StreamChunk = Type.Object({
  output: Type.Unknown(),
  metrics: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
})
export type StreamChunk = Static<typeof StreamChunk>

export const StreamView = Type.Object({
  id: Type.String(),
  status: JobStatus,
  stream: Type.Array(StreamChunk, { description: 'chunks not returned by an earlier call' }),
  error: Type.Optional(Type.String()),
})
export type StreamView = Static<typeof StreamView>

export const PurgeResult = Type.Object({ removed: Type.Integer(), status: Type.String() })
export type PurgeResult = Static<typeof PurgeResult>

export const Health = Type.Object({
  jobs: Type.Object({
    completed: Type.Integer(),
    failed: Type.Integer(),
    inProgress: Type.Integer(),
    inQueue: Type.Integer(),
    retried: Type.Integer({
      description:
        "times Hangar put a kept job back in the queue because it lost its worker (a crash, missed heartbeats), summed over the jobs kept; POST /retry is not counted: it starts a job afresh, and that job's own count starts again at 0",
    }),
  }),
  workers: Type.Object({
    idle: Type.Integer(),
    initializing: Type.Integer(),
    ready: Type.Integer(),
    running: Type.Integer(),
    throttled: Type.Integer({ description: 'workers wanted but not placed: no capacity' }),
    unhealthy: Type.Integer({ description: 'workers that crashed or failed to start recently' }),
  }),
})
export type Health = Static<typeof Health>

export const RequestsQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'at most this many, default 100' })),
})

/** One job as GET /v2/{id}/requests lists it: what it is doing and where, without input or output. */
export const RequestSummary = Type.Object({
  id: Type.String(),
  status: JobStatus,
  createdAt: DateTime,
  startedAt: Type.Union([DateTime, Type.Null()], { description: 'when a worker took it; null while it waits' }),
  completedAt: Type.Union([DateTime, Type.Null()], { description: 'when it reached a final status' }),
  delayTime: Type.Optional(Type.Integer({ description: 'ms from submission to the start of execution' })),
  executionTime: Type.Optional(Type.Integer({ description: 'ms of execution' })),
  workerId: Type.Union([Type.String(), Type.Null()], { description: 'the worker that runs or ran it' }),
  retries: Type.Integer({ description: 'times it went back to the queue after losing its worker' }),
  sync: Type.Boolean({ description: 'submitted through /runsync (or a non-streaming /openai request)' }),
  error: Type.Optional(Type.String()),
})
export type RequestSummary = Static<typeof RequestSummary>

/** GET /v2/{id}/requests: the endpoint's recent requests (jobs kept now), newest first. */
export const RequestList = Type.Object({ requests: Type.Array(RequestSummary) })
export type RequestList = Static<typeof RequestList>
