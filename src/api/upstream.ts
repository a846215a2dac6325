import type { FastifyReplyFromHooks } from '@fastify/reply-from'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { endToEnd, type Headers } from '../domain/hopByHop.js'
import { sendProblem } from './problem.js'

/** How one proxied request (to a load-balancer worker or a pod port) names its upstream and shapes its headers. */
export interface UpstreamOptions {
  /** Request headers kept from the upstream besides the hop-by-hop ones (the caller's API key, the replica mark). */
  drop: readonly string[]
  /** The upstream in words, for the 502 and 504 problems: `worker w of endpoint e`, `port 8080 of pod p`. */
  upstream: string
  /** The request timeout the proxy's client was given, named in a 504. */
  timeoutMs?: number
  /** Adds to the request headers once the hop-by-hop ones are gone (X-Forwarded-*). */
  extend?: (req: FastifyRequest, headers: Headers) => Headers
  /** Answers a failure itself instead (a body over the limit is 413, not 502); true when it did. */
  intercept?: () => boolean
}

/**
 * The @fastify/reply-from options both proxies share (`/lb/...` and `/proxy/...`), so they follow one rule:
 * hop-by-hop fields (RFC 9110 §7.6.1, and those the Connection header names) are dropped both ways, and an
 * upstream that fails is a problem: 504 when it is silent past the timeout, 502 for anything else (refused
 * connection, reset, a malformed answer), never a bare 500.
 */
export function upstreamOptions(req: FastifyRequest, reply: FastifyReply, o: UpstreamOptions): FastifyReplyFromHooks {
  return {
    rewriteRequestHeaders: (r, headers) => {
      const kept = endToEnd(headers as Headers, o.drop)
      return (o.extend ? o.extend(r as FastifyRequest, kept) : kept) as Record<string, string>
    },
    rewriteHeaders: (headers) => endToEnd(headers as Headers) as Record<string, string>,
    onError: (_reply, { error }) => {
      // The rest of an unread body would be taken for the next request on this connection: close it.
      if (!req.raw.complete) reply.header('connection', 'close')
      if (o.intercept?.()) return
      const e = error as Error & { statusCode?: number; code?: string; cause?: { code?: string } }
      const code = e.cause?.code ?? e.code ?? ''
      if (e.statusCode === 504 || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
        return void sendProblem(
          reply,
          504,
          `${o.upstream} did not answer ${o.timeoutMs === undefined ? 'in time' : `within ${o.timeoutMs} ms`}`,
        )
      }
      sendProblem(reply, 502, `${o.upstream} failed the request: ${code || e.message}`)
    },
  }
}
