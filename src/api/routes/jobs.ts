import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyContextConfig } from 'fastify'
import {
  EndpointJobParams,
  Health,
  JobParams,
  JobRef,
  JobRequest,
  JobStatusView,
  PurgeResult,
  RequestList,
  RequestsQuery,
  StatusQuery,
  StreamQuery,
  StreamView,
  SubmitHeaders,
  WaitQuery,
} from '../../contract/job.js'
import { IDEMPOTENCY_HEADER, parseIdempotencyKey } from '../../domain/jobs/idempotency.js'
import type { JobOperation } from '../../domain/rateLimits.js'
import { RawJson } from '../../domain/RawJson.js'
import { rawJsonReply } from '../rawJsonReply.js'
import type { AppDeps } from '../app.js'

const tags = ['jobs']
const MB = 1024 * 1024

/**
 * Job operations take the key bare or as Bearer, answer 401 (not 403) to a key without permission on the
 * endpoint, let RESTRICTED keys use their own endpoints, answer a malformed request with 400 (the spec's
 * job-operation errors list no 422), and are rate limited per endpoint.
 */
export const jobConfig = (op?: JobOperation): FastifyContextConfig => ({
  bareKey: true,
  deniedAs: 'unauthorized' as const,
  restricted: 'jobs' as const,
  validationStatus: 400,
  ...(op ? { jobOperation: op } : { quota: false }),
})

/** The queue operations of the spec under /v2/{endpointId}; every success is HTTP 200 (runpod-sdk needs it). */
export const jobRoutes =
  ({ jobs }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    // While shutting down, long-polls answer at once; closing the connection keeps clients that poll
    // again without pause (runpod-sdk's stream) from spinning against a server that is going away.
    // A callback hook, not an async one: no promise per response on the hot path.
    app.addHook('onSend', (_req, reply, payload, done) => {
      if (jobs.closing) reply.header('connection', 'close')
      done(null, payload)
    })
    // Results are kept as the text workers sent (RawJson): written out as is, not through the schema's serializer.
    app.addHook('preSerialization', (_req, reply, payload, done) => {
      if (carriesRaw(payload)) rawJsonReply(reply)
      done(null, payload)
    })
    app.post(
      '/v2/:endpointId/run',
      {
        bodyLimit: 10 * MB,
        config: { ...jobConfig('run'), rawJsonField: 'input' },
        schema: {
          tags,
          summary: 'Submit a job (asynchronous)',
          params: EndpointJobParams,
          headers: SubmitHeaders,
          body: JobRequest,
          response: { 200: JobRef },
        },
      },
      async (req) =>
        jobs.submit(req.principal, req.params.endpointId, req.body, {
          idempotencyKey: parseIdempotencyKey(req.headers[IDEMPOTENCY_HEADER]),
        }),
    )
    app.post(
      '/v2/:endpointId/runsync',
      {
        bodyLimit: 20 * MB,
        config: { ...jobConfig('runsync'), rawJsonField: 'input' },
        schema: {
          tags,
          summary: 'Submit a job and wait for its result',
          params: EndpointJobParams,
          headers: SubmitHeaders,
          querystring: WaitQuery,
          body: JobRequest,
          response: { 200: JobStatusView },
        },
      },
      // Not awaited here, and the request lets go of its body: while the call waits for the result, the input
      // is held once, by the store (see JobService.submit).
      (req) =>
        jobs.submit(req.principal, req.params.endpointId, handOver(req), {
          sync: true,
          waitMs: req.query.wait,
          idempotencyKey: parseIdempotencyKey(req.headers[IDEMPOTENCY_HEADER]),
        }),
    )
    app.get(
      '/v2/:endpointId/status/:jobId',
      {
        config: jobConfig('status'),
        schema: {
          tags,
          summary: 'Status of a job',
          params: JobParams,
          querystring: StatusQuery,
          response: { 200: JobStatusView },
        },
      },
      async (req) => jobs.status(req.principal, req.params.endpointId, req.params.jobId, req.query.ttl),
    )
    app.get(
      '/v2/:endpointId/status-sync/:jobId',
      {
        config: jobConfig('status'),
        schema: {
          tags,
          summary: 'Status of a job, waiting for a final state',
          params: JobParams,
          querystring: WaitQuery,
          response: { 200: JobStatusView },
        },
      },
      async (req) => jobs.statusSync(req.principal, req.params.endpointId, req.params.jobId, req.query.wait),
    )
    app.get(
      '/v2/:endpointId/stream/:jobId',
      {
        config: jobConfig('stream'),
        schema: {
          tags,
          summary: 'Stream chunks not returned before',
          params: JobParams,
          querystring: StreamQuery,
          response: { 200: StreamView },
        },
      },
      async (req) => jobs.stream(req.principal, req.params.endpointId, req.params.jobId, req.query.wait),
    )
    app.post(
      '/v2/:endpointId/cancel/:jobId',
      {
        config: jobConfig('cancel'),
        schema: { tags, summary: 'Cancel a job', params: JobParams, response: { 200: JobRef } },
      },
      async (req) => jobs.cancel(req.principal, req.params.endpointId, req.params.jobId),
    )
    app.post(
      '/v2/:endpointId/retry/:jobId',
      {
        config: jobConfig(),
        schema: { tags, summary: 'Retry a FAILED or TIMED_OUT job', params: JobParams, response: { 200: JobRef } },
      },
      async (req) => jobs.retry(req.principal, req.params.endpointId, req.params.jobId),
    )
    app.post(
      '/v2/:endpointId/purge-queue',
      {
        config: jobConfig('purge-queue'),
        schema: { tags, summary: 'Remove the waiting jobs', params: EndpointJobParams, response: { 200: PurgeResult } },
      },
      async (req) => jobs.purgeQueue(req.principal, req.params.endpointId),
    )
    app.get(
      '/v2/:endpointId/health',
      {
        config: jobConfig(),
        schema: { tags, summary: 'Job and worker counters', params: EndpointJobParams, response: { 200: Health } },
      },
      async (req) => jobs.health(req.principal, req.params.endpointId),
    )
    app.get(
      '/v2/:endpointId/requests',
      {
        config: jobConfig('requests'),
        schema: {
          tags,
          summary: "The endpoint's recent requests",
          description:
            'Jobs still kept (within their retention), newest first, with status, times and worker; no inputs or outputs (see /status).',
          params: EndpointJobParams,
          querystring: RequestsQuery,
          response: { 200: RequestList },
        },
      },
      async (req) => jobs.requests(req.principal, req.params.endpointId, req.query.limit),
    )
  }

/** Whether a job view carries a RawJson result (`output`, or a stream chunk's). */
function carriesRaw(payload: unknown): boolean {
  const v = payload as { output?: unknown; stream?: Array<{ output?: unknown }> } | null
  return (
    v !== null &&
    typeof v === 'object' &&
    (v.output instanceof RawJson || (Array.isArray(v.stream) && v.stream.some((c) => c.output instanceof RawJson)))
  )
}

/** The request's body, which the request itself no longer holds (it lives on only as long as its taker keeps it). */
function handOver<T>(req: { body: T }): T {
  const body = req.body
  ;(req as { body: unknown }).body = undefined
  return body
}
