import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import {
  MAX_DONE_BATCH,
  WorkerDoneBatchReply,
  WorkerDoneQuery,
  WorkerJob,
  WorkerJobBatch,
  WorkerJobParams,
  WorkerJobsToStop,
  WorkerParams,
  WorkerPingQuery,
  WorkerPingReply,
  WorkerPostReply,
  WorkerTakeBatchQuery,
  type WorkerDoneBatchItem,
  type WorkerDoneBody,
} from '../../contract/worker.js'
import { DomainError } from '../../domain/errors.js'
import { piecesWithRaw } from '../../domain/RawJson.js'
import { decodeJsonArrayBody, decodeJsonBody, readBody, type JsonBodyOptions } from '../jsonBody.js'
import type { IncomingMessage } from 'node:http'
import { Readable } from 'node:stream'
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
    app.addContentTypeParser(
      '*',
      { bodyLimit: MAX_RESULT_BYTES },
      async (req: FastifyRequest, payload: IncomingMessage) => readBody(payload, req.headers, MAX_RESULT_BYTES),
    )
    // A result's output is only stored and handed on: kept as raw text (see RawJson); chunks are split, so parsed.
    const decode = (body: unknown, rawField?: string) =>
      parseJson(body, { maxDepth: limits.maxJsonDepth, rawField, rawAnyType: true, parse: JSON.parse })
    const decodeBatch = (body: unknown) =>
      parseJson(
        body,
        { maxDepth: limits.maxJsonDepth, rawField: 'output', rawAnyType: true, parse: JSON.parse },
        decodeJsonArrayBody,
      )

    // A callback hook: the leader knows its workers' keys in memory (a follower asks the store), and an async
    // hook cost a promise and a turn of the microtask queue on each of a worker's two calls per job.
    app.addHook('onRequest', (req, _reply, done) => {
      const { endpointId, workerId } = req.params as { endpointId: string; workerId: string }
      const header = req.headers.authorization?.trim()
      const token = header?.replace(/^Bearer[ \t]+/i, '')
      const refused = () =>
        new DomainError(
          'unauthorized',
          `not a live worker of endpoint ${JSON.stringify(endpointId)}, or the wrong worker key`,
        )
      const known = workers.authenticate(endpointId, workerId, token)
      if (typeof known === 'boolean') return done(known ? undefined : refused())
      known.then((ok) => done(ok ? undefined : refused()), done)
    })

    // While shutting down, take answers 204 at once and the SDK polls again without pause: close the
    // connection so it backs off instead of spinning.
    // A callback hook, not an async one: no promise per response on the hot path.
    app.addHook('onSend', (_req, reply, payload, done) => {
      if (workerJobs.closing) reply.header('connection', 'close')
      done(null, payload)
    })

    const gone = (req: FastifyRequest) => () => req.raw.destroyed || req.raw.socket?.destroyed === true

    app.get(
      '/v2/:endpointId/job-take/:workerId',
      {
        config,
        schema: {
          tags,
          security,
          summary: 'Take one job (long-poll; 204 when none)',
          params: WorkerParams,
          response: { 200: WorkerJob, 204: none },
        },
      },
      async (req, reply) => {
        const [job] = await workerJobs.take(req.params.endpointId, req.params.workerId, 1, gone(req))
        // The input goes out as the bytes it came in (RawJson), not parsed and written again: written by
        // sendWithRaw, since the compiled serializer would write a RawJson's fields.
        return job ? sendWithRaw(reply, job) : reply.code(204).send(null)
      },
    )
    app.get(
      '/v2/:endpointId/job-take-batch/:workerId',
      {
        config,
        schema: {
          tags,
          security,
          summary: 'Take up to batch_size jobs (long-poll; 204 when none)',
          params: WorkerParams,
          querystring: WorkerTakeBatchQuery,
          response: { 200: WorkerJobBatch, 204: none },
        },
      },
      async (req, reply) => {
        const jobs = await workerJobs.take(
          req.params.endpointId,
          req.params.workerId,
          req.query.batch_size ?? 1,
          gone(req),
        )
        return jobs.length ? sendWithRaw(reply, jobs) : reply.code(204).send(null)
      },
    )
    app.get(
      '/v2/:endpointId/job-stop/:workerId',
      {
        config,
        schema: {
          tags,
          security,
          summary: 'Running jobs to stop (long-poll; 204 when none)',
          params: WorkerParams,
          response: { 200: WorkerJobsToStop, 204: none },
        },
      },
      async (req, reply) => {
        const ids = await workerJobs.stops(req.params.workerId, gone(req))
        return ids.length ? { jobsToStop: ids } : reply.code(204).send(null)
      },
    )
    app.get(
      '/v2/:endpointId/ping/:workerId',
      {
        config,
        schema: {
          tags,
          security,
          summary: 'Worker heartbeat, with the ids of the jobs it runs',
          params: WorkerParams,
          querystring: WorkerPingQuery,
          response: { 200: WorkerPingReply },
        },
      },
      async (req) => {
        await workerJobs.ping(req.params.workerId, req.query.job_id ? req.query.job_id.split(',') : [])
        return {}
      },
    )

    app.post(
      '/v2/:endpointId/job-done/:workerId/:jobId',
      {
        config,
        schema: {
          tags,
          security,
          summary: 'Post a result, an error or a progress update (JSON text, any content type)',
          params: WorkerJobParams,
          querystring: WorkerDoneQuery,
          response: { 200: WorkerPostReply },
        },
        // A result too large to take fails the job with that reason instead of leaving it to time out.
        errorHandler: async (err: FastifyError | DomainError, req: FastifyRequest, _reply: FastifyReply) => {
          const { workerId, jobId } = req.params as { workerId: string; jobId: string }
          if (err instanceof DomainError ? err.kind === 'payload_too_large' : err.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
            await workerJobs.rejectResult(workerId, jobId, `it is larger than ${MAX_RESULT_BYTES} bytes`)
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
        return workerJobs.done(workerId, jobId, body.value as WorkerDoneBody)
      },
    )
    // Hangar's extension (its worker SDK; the Python SDK never calls it): several job-done bodies in one
    // request, applied together so that they share one commit. A body it refuses applies none of them; it
    // fails no job either (unlike job-done, the jobs of a body it cannot read are not known), so the
    // worker can post them again one by one.
    app.post(
      '/v2/:endpointId/job-done-batch/:workerId',
      {
        config,
        schema: {
          tags,
          security,
          summary: `Post up to ${MAX_DONE_BATCH} results at once: a JSON array of job-done bodies, each with its job's "id" (JSON text, any content type)`,
          description:
            'Each item means what job-done with that body means; the reply lists what became of each, in the same order. A malformed body (not an array of objects, an item without a string id, a job twice, too many items) is a 400 and nothing is applied.',
          params: WorkerParams,
          response: { 200: WorkerDoneBatchReply },
        },
      },
      async (req) => {
        const body = decodeBatch(req.body)
        if (!body.ok) throw new DomainError('bad_request', `job-done-batch body: it is not valid JSON (${body.error})`)
        return workerJobs.doneBatch(req.params.workerId, batchItems(body.value))
      },
    )
    app.post(
      '/v2/:endpointId/job-stream/:workerId/:jobId',
      {
        config,
        schema: {
          tags,
          security,
          summary: 'Post a stream chunk {"output": chunk}',
          params: WorkerJobParams,
          response: { 200: WorkerPostReply },
        },
      },
      async (req) => {
        const body = decode(req.body)
        if (!body.ok) throw new DomainError('bad_request', `job-stream body is not valid JSON (${body.error})`)
        return workerJobs.streamChunk(req.params.workerId, req.params.jobId, body.value)
      },
    )
  }

function parseJson<O extends JsonBodyOptions>(
  body: unknown,
  o: O,
  decoder: (buf: Buffer, o: O) => unknown = decodeJsonBody,
): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    const value = Buffer.isBuffer(body) ? decoder(body, o) : undefined
    return value === undefined ? { ok: false, error: 'empty body' } : { ok: true, value }
  } catch (err) {
    return { ok: false, error: (err as Error).message }
  }
}

/**
 * The items of a job-done-batch body, checked before any is applied: an array of at most MAX_DONE_BATCH
 * objects, each with a non-empty string `id` of its own. The first fault is a 400 naming the item.
 */
function batchItems(body: unknown): WorkerDoneBatchItem[] {
  const bad = (where: string, why: string) => new DomainError('bad_request', `job-done-batch body${where}: ${why}`)
  if (!Array.isArray(body))
    throw bad('', `it must be a JSON array of job-done bodies, each with its job's "id", not ${kindOf(body)}`)
  if (body.length > MAX_DONE_BATCH)
    throw bad('', `it holds ${body.length} results, at most ${MAX_DONE_BATCH} are taken in one request`)
  const seen = new Map<string, number>()
  for (let k = 0; k < body.length; k++) {
    const item: unknown = body[k]
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      throw bad(`[${k}]`, `it must be a JSON object (a job-done body with "id"), not ${kindOf(item)}`)
    const { id, isStream } = item as { id?: unknown; isStream?: unknown }
    if (id === undefined) throw bad(`[${k}].id`, 'missing: each result names its job with "id"')
    if (typeof id !== 'string' || id === '')
      throw bad(
        `[${k}].id`,
        `it must be the job id, a non-empty string, not ${id === '' ? 'an empty one' : kindOf(id)}`,
      )
    const first = seen.get(id)
    if (first !== undefined)
      throw bad(`[${k}].id`, `job ${JSON.stringify(id)} is already at [${first}]: post each job once`)
    if (isStream !== undefined && typeof isStream !== 'boolean')
      throw bad(`[${k}].isStream`, `it must be true or false, not ${kindOf(isStream)}`)
    seen.set(id, k)
  }
  return body as WorkerDoneBatchItem[]
}

function kindOf(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? 'an object' : `a ${typeof v}`
}

/** Up to this size a job-take answer is sent as one buffer; larger ones are streamed piece by piece. */
const COPY_BYTES = 64 * 1024

/**
 * Sends `value` as JSON with each RawJson written as it is held: one string when all are text, else the
 * pieces with their total length. A large input held as bytes (read from the store) is streamed to the socket
 * as that buffer, not copied into a string and then into another buffer; a small answer is copied into one
 * buffer, which costs less than a stream (every job's input is held as bytes).
 */
function sendWithRaw(reply: FastifyReply, value: unknown): FastifyReply {
  reply.type('application/json; charset=utf-8')
  const pieces = piecesWithRaw(value)
  if (typeof pieces === 'string') return reply.send(pieces)
  const buffers = pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p))
  const length = buffers.reduce((n, b) => n + b.length, 0)
  if (length <= COPY_BYTES) return reply.send(Buffer.concat(buffers, length))
  reply.header('content-length', length)
  return reply.send(Readable.from(buffers))
}
