import replyFrom from '@fastify/reply-from'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { AppDeps } from '../app.js'
import { FORWARDED_BY } from '../leaderForwarding.js'
import { upstreamOptions } from '../upstream.js'

const Params = Type.Object({ id: Type.String(), port: Type.Integer({ minimum: 1, maximum: 65535 }), '*': Type.Optional(Type.String()) })

/**
 * `/proxy/{podId}/{port}/...`: a RUNNING pod's HTTP port through Hangar, with the caller's API key (the
 * way users open Jupyter on the reference platform's proxy). The key is checked here and not passed on;
 * the program sees the path after the port. Bodies pass through unparsed; hop-by-hop headers are dropped
 * both ways and a port that refuses or fails the request is a 502 problem, as on `/lb` (upstreamOptions).
 * Reads need a read key, other methods an ALL key, as everywhere.
 */
export const podProxyRoutes =
  ({ pods }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    await app.register(replyFrom)
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', (_req, payload, done) => done(null, payload))
    for (const url of ['/proxy/:id/:port', '/proxy/:id/:port/*']) {
      app.all(url, { schema: { hide: true, params: Params } }, async (req, reply) => {
        const target = await pods.httpTarget(req.principal, req.params.id, req.params.port)
        const rest = req.params['*'] ?? ''
        return reply.from(`http://${target.ip}:${target.port}/${rest}`, upstreamOptions(req, reply, { drop: ['authorization', FORWARDED_BY], upstream: `port ${req.params.port} of pod ${req.params.id}` }))
      })
    }
  }
