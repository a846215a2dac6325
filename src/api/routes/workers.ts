import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { IdParams } from '../../contract/common.js'
import { WorkerList } from '../../contract/worker.js'
import type { LogLine } from '../../runtime/WorkerLog.js'
import type { AppDeps } from '../app.js'

const Params = Type.Object({ id: Type.String(), workerId: Type.String() })
const Query = Type.Object({
  source: Type.Optional(Type.Enum(['container', 'system'])),
  tail: Type.Optional(Type.Integer({ minimum: 0, maximum: 5000, description: 'history lines to send first; default 100, 0 = live only' })),
  since: Type.Optional(Type.String({ format: 'date-time' })),
})
const KEEPALIVE_MS = 15_000

/**
 * The workers of an endpoint, and their logs as server-sent events: the history tail, then live lines until the worker ends. Each event
 * is `id: <ts>/<12-digit seq>` and `data: {ts, source, line}`; Last-Event-ID resumes after that line.
 */
export const workerRoutes =
  ({ workers }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/v2/serverless/:id/workers',
      { config: { restricted: 'endpoint' }, schema: { tags: ['serverless'], summary: "An endpoint's active workers", params: IdParams, response: { 200: WorkerList } } },
      async (req) => workers.list(req.principal.accountId, req.params.id),
    )
    app.get(
      '/v2/serverless/:id/workers/:workerId/logs',
      {
        config: { restricted: 'endpoint' },
        schema: { tags: ['serverless'], summary: "Stream a worker's logs (text/event-stream)", params: Params, querystring: Query },
      },
      async (req, reply) => {
        const log = await workers.logs(req.principal.accountId, req.params.id, req.params.workerId)
        const { source, tail = 100, since } = req.query
        const wanted = (l: LogLine) => source === undefined || l.source === source
        const lastId = req.headers['last-event-id']
        const afterSeq = typeof lastId === 'string' ? Number(/(?:\/)(\d+)$/.exec(lastId)?.[1] ?? NaN) : NaN
        const afterTs = !Number.isNaN(afterSeq) ? null : typeof lastId === 'string' && !Number.isNaN(Date.parse(lastId)) ? Date.parse(lastId) : since ? Date.parse(since) : null
        let history = log.history().filter(wanted)
        if (!Number.isNaN(afterSeq)) history = history.filter((l) => l.seq > afterSeq)
        else if (afterTs !== null) history = history.filter((l) => l.ts > afterTs)
        else history = tail === 0 ? [] : history.slice(-tail)

        reply.hijack()
        const res = reply.raw
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' })
        const send = (l: LogLine) => res.write(`id: ${new Date(l.ts).toISOString()}/${String(l.seq).padStart(12, '0')}\ndata: ${JSON.stringify({ ts: new Date(l.ts).toISOString(), source: l.source, line: l.line })}\n\n`)
        let lastSent = 0
        for (const l of history) {
          send(l)
          lastSent = l.seq
        }
        const stopLive = log.onLine((l) => {
          if (wanted(l) && l.seq > lastSent) send(l)
        })
        const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS)
        let stopEnd: () => void = () => {}
        const finish = () => {
          stopLive()
          stopEnd()
          clearInterval(keepalive)
          if (!res.writableEnded) res.end()
        }
        res.once('close', finish)
        // onEnd calls finish at once when the worker has already exited (the history is all there is).
        stopEnd = log.onEnd(finish)
      },
    )
  }
