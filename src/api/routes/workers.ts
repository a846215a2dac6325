import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { IdParams } from '../../contract/common.js'
import { WorkerList } from '../../contract/worker.js'
import { LogQuery } from '../../contract/logs.js'
import { streamLog } from '../logStream.js'
import type { AppDeps } from '../app.js'

const Params = Type.Object({ id: Type.String(), workerId: Type.String() })

/**
 * The workers of an endpoint, and their logs as server-sent events: the history tail, then live lines until the worker ends. Each event
 * is `id: <ts>/<12-digit seq>` and `data: {ts, source, line}`; Last-Event-ID resumes after that line.
 */
export const workerRoutes =
  ({ workers }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/v2/serverless/:id/workers',
      {
        config: { restricted: 'endpoint' },
        schema: {
          tags: ['serverless'],
          summary: "An endpoint's active workers",
          params: IdParams,
          response: { 200: WorkerList },
        },
      },
      async (req) => workers.list(req.principal.accountId, req.params.id),
    )
    app.get(
      '/v2/serverless/:id/workers/:workerId/logs',
      {
        config: { restricted: 'endpoint' },
        schema: {
          tags: ['serverless'],
          summary: "Stream a worker's logs (text/event-stream)",
          params: Params,
          querystring: LogQuery,
        },
      },
      async (req, reply) =>
        streamLog(
          req,
          reply,
          await workers.logs(req.principal.accountId, req.params.id, req.params.workerId),
          req.query,
        ),
    )
  }
