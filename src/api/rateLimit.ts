import type { FastifyInstance } from 'fastify'
import type { JobOperation } from '../domain/rateLimits.js'
import type { RateLimiter } from '../ratelimit/RateLimiter.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Marks a per-endpoint job operation, limited per endpoint instead of by the account quota. */
    jobOperation?: JobOperation
    /** false: not counted against the management quota (worker protocol, job operations). */
    quota?: boolean
  }
}

/**
 * Applies limits after authentication: job operations get the per-endpoint rate and concurrency limits
 * (the slot is released when the response ends, however it ends); other authenticated routes count
 * against the account's quota and carry RateLimit / RateLimit-Policy on every response.
 */
export function registerRateLimits(app: FastifyInstance, limiter: RateLimiter): void {
  // A callback hook: requests with nothing to count (exempt accounts, unlimited routes) cost no promise.
  app.addHook('onRequest', (req, reply, done) => {
    const config = req.routeOptions.config
    if (!req.principal || !req.routeOptions.url) return done()
    if (config.jobOperation) {
      const params = req.params as { endpointId?: string }
      limiter.enterJobOperation(params.endpointId ?? '', config.jobOperation).then((release) => {
        // 'close' fires on success, error, timeout and client disconnect alike.
        reply.raw.once('close', release)
        done()
      }, done)
      return
    }
    if (config.quota === false || req.principal.rateLimitExempt) return done()
    limiter.quota(req.principal.accountId).then((headers) => {
      reply.headers(headers)
      done()
    }, done)
  })
}
