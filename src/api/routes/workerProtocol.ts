import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import {
  WorkerDoneQuery,
  WorkerJob,
  WorkerJobBatch,
  WorkerJobParams,
  WorkerJobsToStop,
  WorkerParams,
  WorkerPingReply,
  WorkerPostReply,
  WorkerTakeBatchQuery,
  type WorkerDoneBody,
} from '../../contract/worker.js'
import { DomainError } from '../../domain/errors.js'
import { stringifyWithRaw } from '../../domain/RawJson.js'
import { decodeJsonBody, readBody, type JsonBodyOptions } from '../jsonBody.js'
import type { IncomingMessage } from 'node:http'
import type { AppDeps } from '../app.js'

/** Largest result a worker may post; anything larger fails the job with that reason. */
const MAX_RESULT_BYTES = 64 * 1024 * 1024

// The worker's own key is checked by this plugin's hook, not the account key hook.
const config = { access: 'public' as const, quota: false }
const tags = ['worker protocol']
// Authenticated by the worker's own key (RUNPOD_AI_API_KEY), sent bare in `authorization`.
const security: Array<Record<string, string[]>> = []
const none = Type.Null({ description: 'nothing (the long-poll ended empty)' })

/**
 * The worker protocol the Python `runpod` SDK and Hangar's worker SDK speak (see the worker protocol
 * reference). URLs carry the worker id; `$ID` became the job id; the SDK appends `&` parameters.
 */
export const workerProtocolRoutes =
  ({ workerJobs, workers, limits }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    // Results arrive as JSON text labelled application/x-www-form-urlencoded (or anything): read the bytes,
    // decoded by the handler (so a refused result can fail its job).
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', { bodyLimit: MAX_RESULT_BYTES }, async (req: FastifyRequest, payload: IncomingMessage) => readBody(payload, req.headers, MAX_RESULT_BYTES))
    // A result's output is only stored and handed on: kept as raw text (see RawJson); chunks are split, so parsed.
    const decode = (body: unknown, rawField?: string) => parseJson(body, { maxDepth: limits.maxJsonDepth, rawField, rawAnyType: true, parse: JSON.parse })

    app.addHook('onRequest', async (req) => {
      const { endpointId, workerId } = req.params as { endpointId: string; workerId: string }
      const header = req.headers.authorization?.trim()
      const token = header?.replace(/^Bearer[ \t]+/i, '')
      if (!(await workers.authenticate(endpointId, workerId, token))) throw new DomainError('unauthorized', `not a live worker of endpoint ${JSON.stringify(endpointId)}, or the wrong worker key`)
    })

    // While shutting down, take answers 204 at once and the SDK polls again without pause: close the
    // connection so it backs off instead of spinning.
    // A callback hook, not an async one: no promise per response on the hot path.
    app.addHook('onSend', (_req, reply, payload, done) => {
      if (workerJobs.closing) reply.header('connection', 'close')
      done(null, payload)
    })

    const gone = (req: FastifyRequest) => () => req.raw.destroyed || req.raw.socket?.destroyed === true

    app.get('/v2/:endpointId/job-take/:workerId', { config, schema: { tags, security, summary: 'Take one job (long-poll; 204 when none)', params: WorkerParams, response: { 200: WorkerJob, 204: none } } }, async (req, reply) => {
      const [job] = await workerJobs.take(req.params.endpointId, req.params.workerId, 1, gone(req))
      // The input goes out as the text it came in (RawJson), not parsed and written again: a serializer of
      // its own, since the compiled one would write a RawJson's fields.
      return job ? reply.serializer(stringifyWithRaw).send(job) : reply.code(204).send(null)
    })
    app.get('/v2/:endpointId/job-take-batch/:workerId', { config, schema: { tags, security, summary: 'Take up to batch_size jobs (long-poll; 204 when none)', params: WorkerParams, querystring: WorkerTakeBatchQuery, response: { 200: WorkerJobBatch, 204: none } } }, async (req, reply) => {
      const jobs = await workerJobs.take(req.params.endpointId, req.params.workerId, req.query.batch_size ?? 1, gone(req))
      return jobs.length ? reply.serializer(stringifyWithRaw).send(jobs) : reply.code(204).send(null)
    })
    app.get('/v2/:endpointId/job-stop/:workerId', { config, schema: { tags, security, summary: 'Running jobs to stop (long-poll; 204 when none)', params: WorkerParams, response: { 200: WorkerJobsToStop, 204: none } } }, async (req, reply) => {
      const ids = await workerJobs.stops(req.params.workerId, gone(req))
      return ids.length ? { jobsToStop: ids } : reply.code(204).send(null)
    })
    app.get('/v2/:endpointId/ping/:workerId', { config, schema: { tags, security, summary: 'Worker heartbeat', params: WorkerParams, response: { 200: WorkerPingReply } } }, async (req) => {
      workerJobs.ping(req.params.workerId)
      return {}
    })

    app.post(
      '/v2/:endpointId/job-done/:workerId/:jobId',
      {
        config,
        schema: { tags, security, summary: 'Post a result, an error or a progress update (JSON text, any content type)', params: WorkerJobParams, querystring: WorkerDoneQuery, response: { 200: WorkerPostReply } },
        // A result too large to take fails the job with that reason instead of leaving it to time out.
        errorHandler: async (err: FastifyError | DomainError, req: FastifyRequest, reply: FastifyReply) => {
          const { workerId, jobId } = req.params as { workerId: string; jobId: string }
          if (err instanceof DomainError ? err.kind === 'payload_too_large' : err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') await workerJobs.rejectResult(workerId, jobId, `it is larger than ${MAX_RESULT_BYTES} bytes`)
          throw err
        },
      },
      async (req) => {
        const { workerId, jobId } = req.params
        const body = decode(req.body, 'output')
        if (!body.ok || typeof body.value !== 'object' || body.value === null || Array.isArray(body.value)) {
          const why = body.ok ? 'it is not a JSON object' : `it is not valid JSON (${body.error})`
          await workerJobs.rejectResult(workerId, jobId, why)
          throw new DomainError('bad_request', `job-done body: ${why}`)
        }
        return workerJobs.done(workerId, jobId, body.value as WorkerDoneBody, req.query.isStream === 'true')
      },
    )
    app.post('/v2/:endpointId/job-stream/:workerId/:jobId', { config, schema: { tags, security, summary: 'Post a stream chunk {"output": chunk}', params: WorkerJobParams, response: { 200: WorkerPostReply } } }, async (req) => {
      const body = decode(req.body)
      if (!body.ok) throw new DomainError('bad_request', `job-stream body is not valid JSON (${body.error})`)
      return workerJobs.streamChunk(req.params.workerId, req.params.jobId, body.value)
    })
  }

function parseJson(body: unknown, o: JsonBodyOptions): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    const value = Buffer.isBuffer(body) ? decodeJsonBody(body, o) : undefined
    return value === undefined ? { ok: false, error: 'empty body' } : { ok: true, value }
  } catch (err) {
    return { ok: false, error: (err as Error).message }
  }
}
