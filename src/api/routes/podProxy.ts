import replyFrom from '@fastify/reply-from'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import { DomainError } from '../../domain/errors.js'
import type { AppDeps } from '../app.js'
import { bearer } from '../auth.js'
import { FORWARDED_BY } from '../leaderForwarding.js'
import { upstreamOptions } from '../upstream.js'

const Params = Type.Object({
  id: Type.String(),
  port: Type.Integer({ minimum: 1, maximum: 65535 }),
  '*': Type.Optional(Type.String()),
})

/**
 * `/proxy/{podId}/{port}/...`: a RUNNING pod's HTTP port through Hangar, with the caller's API key (the
 * way users open Jupyter on the reference platform's proxy). The key is checked here and not passed on;
 * the program sees the path after the port. Bodies pass through unparsed; hop-by-hop headers are dropped
 * both ways and a port that refuses or fails the request is a 502 problem, as on `/lb` (upstreamOptions).
 * Reads need a read key, other methods an ALL key, as everywhere.
 */
export const podProxyRoutes =
  ({ pods, accounts, podLinks, rateLimiter }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    await app.register(replyFrom)
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', (_req, payload, done) => done(null, payload))
    // A key in the Authorization header, or (browsers) a console link: its token in `?hangar_link=` once,
    // then in a cookie scoped to this pod's port, so the page's own requests carry it.
    app.addHook('onRequest', async (req, reply) => {
      const { id, port } = req.params as { id: string; port: string }
      if (req.headers.authorization !== undefined || !podLinks) {
        req.principal = await accounts.authenticate(bearer(req.headers.authorization, false))
      } else {
        const url = new URL(req.url, 'http://proxy')
        const fromQuery = url.searchParams.get('hangar_link')
        const cookie = `hangar_link_${port}`
        const token = fromQuery ?? cookieValue(req.headers.cookie, cookie)
        if (!token)
          throw new DomainError(
            'unauthorized',
            'missing credentials: send Authorization: Bearer <key>, or open the port from the console',
          )
        // Checked at each use: a link ends with the key, session or member that opened it.
        req.principal = await accounts.linkHolder(podLinks.verify(token, id, Number(port)))
        if (fromQuery !== null) {
          // The token leaves the address bar (and the program's logs): the cookie carries it from now on.
          url.searchParams.delete('hangar_link')
          reply.header(
            'set-cookie',
            `${cookie}=${token}; Path=/proxy/${id}/${port}/; Max-Age=${12 * 3600}; HttpOnly; SameSite=Lax`,
          )
          return reply.redirect(url.pathname + url.search, 303)
        }
      }
      const p = req.principal
      if (p.permission === 'RESTRICTED')
        throw new DomainError(
          'forbidden',
          `a RESTRICTED key cannot reach pods; it may only read and run jobs on endpoints ${p.endpointIds.join(', ')}`,
        )
      if (req.method !== 'GET' && req.method !== 'HEAD' && p.permission !== 'ALL')
        throw new DomainError('forbidden', `a ${p.permission} key cannot send ${req.method} to a pod`)
      // Counted against the account's quota as before (the API's own hook saw no principal on this public route).
      if (!p.rateLimitExempt) reply.headers(await rateLimiter.quota(p.accountId))
    })
    for (const url of ['/proxy/:id/:port', '/proxy/:id/:port/*']) {
      // Authenticated by the hook above (keys and links), not by the API's own.
      app.all(url, { schema: { hide: true, params: Params }, config: { access: 'public' } }, async (req, reply) => {
        const target = await pods.httpTarget(req.principal, req.params.id, req.params.port)
        const rest = req.params['*'] ?? ''
        return reply.from(
          `http://${target.ip}:${target.port}/${rest}`,
          upstreamOptions(req, reply, {
            drop: ['authorization', FORWARDED_BY],
            upstream: `port ${req.params.port} of pod ${req.params.id}`,
          }),
        )
      })
    }
  }

/** One cookie's value from a Cookie header. */
function cookieValue(header: string | undefined, name: string): string | null {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=')
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim()
  }
  return null
}
