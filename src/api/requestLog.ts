import type { FastifyInstance } from 'fastify'
import { REQUEST_LINE } from '../logger.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the request log keeps the path only, not the query (which carries a secret: the OIDC callback's code). */
    logQuery?: boolean
  }
}

/** Worker-protocol routes: long-polls and heartbeats every few seconds per worker, logged only at debug. */
const WORKER_PROTOCOL =
  /^\/v2\/:endpointId\/(job-take|job-take-batch|job-stop|ping|job-done|job-done-batch|job-stream)\//

/**
 * One line per answered request: at info for clients (management API, job operations), at debug for the
 * worker protocol, whose polling would drown everything else. Fastify's own request logging (two lines per
 * request, with the whole request object) stays off.
 */
export function registerRequestLog(app: FastifyInstance): void {
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? ''
    const level = WORKER_PROTOCOL.test(route) ? 'debug' : 'info'
    // Nothing to build when the line would be dropped (pino's level check; Fastify's no-op logger has none).
    if ((req.log as { isLevelEnabled?: (l: string) => boolean }).isLevelEnabled?.(level) === false) return done()
    // A route may carry secrets in its query (the OIDC callback's code and state): its line keeps the path only.
    const secretQuery = req.routeOptions.config?.logQuery === false
    req.log[level](
      {
        method: req.method,
        url: secretQuery ? req.url.split('?')[0] : req.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        [REQUEST_LINE]: true,
      },
      `${req.method} ${req.url.split('?')[0]} ${reply.statusCode}`,
    )
    done()
  })
}
