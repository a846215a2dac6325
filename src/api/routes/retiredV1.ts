import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { RETIRED_V1_PATHS, retiredV1Answer, V1_SUNSET } from '../../domain/v1Retirement.js'
import type { AppDeps } from '../app.js'
import { sendProblem } from '../problem.js'

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']

/**
 * The retired v1 paths, bare and under `/v1`: 410 Gone naming the v2 successor (also as an RFC 8288
 * `successor-version` link) with the RFC 8594 `Sunset` date. Public and unmetered, so that a client with an
 * old or missing key learns what to change; hidden from the OpenAPI document (they are not part of v2).
 */
export const retiredV1Routes =
  ({ publicUrl }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    for (const entry of RETIRED_V1_PATHS) {
      for (const url of [entry.path, `/v1${entry.path}`]) {
        app.route({
          method: METHODS,
          url,
          schema: { hide: true },
          config: { access: 'public', quota: false },
          handler: async (req, reply) => {
            const { successor, detail } = retiredV1Answer(entry, req.method, (req.params as { id?: string }).id)
            reply.header('sunset', V1_SUNSET)
            if (successor !== null)
              reply.header('link', `<${publicUrl().replace(/\/+$/, '')}${successor}>; rel="successor-version"`)
            return sendProblem(reply, 410, detail)
          },
        })
      }
    }
  }
