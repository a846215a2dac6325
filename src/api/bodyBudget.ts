import type { FastifyInstance } from 'fastify'
import { DomainError } from '../domain/errors.js'

/** Seconds a client refused for lack of body budget is told to wait (Retry-After). */
const RETRY_AFTER_S = 2

/**
 * Caps the request-body bytes held at once. Each request with a body reserves its declared Content-Length
 * (a chunked one, its route's body limit) before the body is read, and gives it back when its response ends,
 * so a /runsync body counts for as long as its call waits. A request that would pass the cap is answered 503
 * with Retry-After at once, instead of the process growing until it runs out of memory; one whose body is
 * larger than the cap itself, or than its route's own body limit, could never be taken, so it is answered 413
 * (no retry helps).
 */
export function registerBodyBudget(
  app: FastifyInstance,
  capBytes: number,
  defaultBodyLimit: number,
): { inFlight(): number } {
  let inFlight = 0
  app.addHook('onRequest', (req, reply, done) => {
    const declared = req.headers['content-length']
    const bytes =
      declared !== undefined
        ? Number(declared) || 0
        : req.headers['transfer-encoding'] !== undefined
          ? (req.routeOptions.bodyLimit ?? defaultBodyLimit)
          : 0
    if (bytes <= 0) return done()
    const mb = (n: number) => `${Math.round(n / 2 ** 20)} MiB`
    // A route with a body limit of its own (/run, /runsync) refuses a longer body whatever the budget: said at once.
    const routeLimit = req.routeOptions.bodyLimit
    if (declared !== undefined && routeLimit !== undefined && routeLimit !== defaultBodyLimit && bytes > routeLimit) {
      return done(
        new DomainError(
          'payload_too_large',
          `request body of ${bytes} bytes is larger than the ${routeLimit}-byte limit of ${req.method} ${req.routeOptions.url}`,
          undefined,
          { connection: 'close' },
        ),
      )
    }
    if (bytes > capBytes) {
      // Answered before the body is read: the connection closes rather than carry the body's remainder.
      return done(
        new DomainError(
          'payload_too_large',
          `request body of ${bytes} bytes is larger than the ${capBytes}-byte (${mb(capBytes)}) limit of request bodies the server holds at once`,
          undefined,
          { connection: 'close' },
        ),
      )
    }
    if (inFlight + bytes > capBytes) {
      return done(
        new DomainError(
          'unavailable',
          `the server holds ${mb(inFlight)} of request bodies, its ${mb(capBytes)} limit leaves no room for ${mb(bytes)} more: retry in ${RETRY_AFTER_S} s`,
          undefined,
          { 'retry-after': String(RETRY_AFTER_S) },
        ),
      )
    }
    inFlight += bytes
    reply.raw.once('close', () => {
      inFlight -= bytes
    })
    done()
  })
  return { inFlight: () => inFlight }
}
