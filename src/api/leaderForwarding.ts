import replyFrom from '@fastify/reply-from'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Leadership } from '../replicas/Leadership.js'
import { DomainError } from '../domain/errors.js'
import { sendProblem } from './problem.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Served by the leader only: on a follower the request is forwarded to it (see needsLeader). */
    leader?: boolean
  }
}

/** Set on a request a follower forwards (its value: the follower's URL); a request carrying it is never forwarded again. */
export const FORWARDED_BY = 'x-hangar-forwarded-by'

/** What a follower needs to know of the leadership to forward requests. */
export type LeaderView = Pick<Leadership, 'isLeader' | 'leaderUrl'>

/**
 * The routes that need the leader's live state, which only it keeps in memory: load-balancer traffic (the
 * workers' HTTP addresses and health), the pod proxy, pods and clusters (their running programs, and the
 * live utilization every pod view carries), and worker logs (the live lines of the leader's workers).
 * Everything else is served from the database by any replica. `url` is a route pattern.
 */
export function needsLeader(url: string): boolean {
  return (
    url.startsWith('/lb/') ||
    url.startsWith('/proxy/') ||
    /^\/v2\/(pods|clusters)(\/|$)/.test(url) ||
    url === '/v2/serverless/:id/workers/:workerId/logs'
  )
}

/**
 * On a control plane of several replicas: marks the routes that need the leader, and forwards such a
 * request reaching a follower to the leader with @fastify/reply-from, before this replica authenticates or
 * counts it (the leader does both, with the client's own Authorization). Bodies are streamed unparsed; the
 * client's Host is kept, so host-based load-balancer addressing works on the leader too. A request already
 * forwarded once is refused rather than sent on (the sender took this replica for the leader: leadership
 * just moved), as is one arriving while no leader is known: 503 with `Retry-After: 1`.
 *
 * Register before authentication and before the routes. The single-process SQLite control plane does not
 * register it at all.
 */
export async function registerLeaderForwarding(
  app: FastifyInstance,
  o: { leadership: LeaderView; self: () => string },
): Promise<void> {
  // Never retried: a forwarded POST must not run twice. No timeouts: the leader applies its own (long-polls, log
  // streams open as long as the client wants). Scopes that register their own reply-from (load-balancer traffic,
  // the pod proxy) forward with theirs: `reply.from` is the route's.
  await app.register(replyFrom, {
    undici: { headersTimeout: 0, bodyTimeout: 0 },
    disableRequestLogging: true,
    retryMethods: [],
  })
  app.addHook('onRoute', (route) => {
    if (needsLeader(route.url)) route.config = { ...(route.config ?? {}), leader: true }
  })
  app.addHook('onRequest', async (req, reply) => {
    if (!req.routeOptions.config.leader || o.leadership.isLeader) return
    await forward(req, reply, o)
  })
}

const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'UND_ERR_CONNECT_TIMEOUT'])
const BROKEN = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET'])

function unavailable(detail: string): DomainError {
  return new DomainError('unavailable', detail, undefined, { 'retry-after': '1' })
}

/** Sends the request to the leader and resolves once the response to the client has ended. */
async function forward(
  req: FastifyRequest,
  reply: FastifyReply,
  o: { leadership: LeaderView; self: () => string },
): Promise<void> {
  const sender = req.headers[FORWARDED_BY]
  if (sender !== undefined)
    throw unavailable(
      `${String(sender)} forwarded this request to the leader, but this replica does not lead (leadership is moving); retry`,
    )
  const leader = o.leadership.leaderUrl
  if (!leader)
    throw unavailable('this replica does not lead and no leader is known right now (one is being elected); retry')
  const raw = req.raw
  // Only a request with a body hands it on (a stream, as received); reply-from sends none otherwise.
  if (
    raw.headers['content-length'] !== undefined
      ? raw.headers['content-length'] !== '0'
      : raw.headers['transfer-encoding'] !== undefined
  )
    req.body = raw
  await new Promise<void>((resolve) => {
    reply.raw.once('close', resolve)
    // As the client sent it: host-based load-balancer addressing rewrites raw.url, and the leader rewrites it again.
    reply.from(`${leader}${req.originalUrl}`, {
      rewriteRequestHeaders: (r, headers) => {
        const prior = [r.headers['x-forwarded-for'] ?? []].flat().join(', ')
        return {
          ...headers,
          host: r.headers.host ?? '',
          [FORWARDED_BY]: o.self(),
          'x-forwarded-for': prior ? `${prior}, ${r.ip}` : r.ip,
        }
      },
      onError: (_rep, { error }) => {
        const e = error as Error & { code?: string; cause?: { code?: string } }
        const code = e.cause?.code ?? e.code ?? ''
        // No connection to the leader at all (it just died, or moved): nothing was done, so a retry is safe; so
        // is a read whose connection broke. A write whose connection broke may have run: 502, for the caller to check.
        if (NOT_CONNECTED.has(code) || (BROKEN.has(code) && (req.method === 'GET' || req.method === 'HEAD'))) {
          reply.header('retry-after', '1')
          return void sendProblem(reply, 503, `the leader at ${leader} could not be reached (${code}); retry`)
        }
        sendProblem(reply, 502, `the leader at ${leader} failed the request: ${code || e.message}`)
      },
    })
  })
}
