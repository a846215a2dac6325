import type { IncomingMessage, ServerResponse } from 'node:http'
import { Readable, Transform, pipeline } from 'node:stream'
import replyFrom from '@fastify/reply-from'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest, HTTPMethods } from 'fastify'
import { DomainError } from '../../domain/errors.js'
import { forwardedHeaders } from '../../domain/hopByHop.js'
import type { AppDeps } from '../app.js'
import { FORWARDED_BY } from '../leaderForwarding.js'
import { sendProblem } from '../problem.js'
import { upstreamOptions } from '../upstream.js'

const METHODS: HTTPMethods[] = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS']
/** In-flight proxied requests get this long to finish when the control plane stops, then are cut. */
const SHUTDOWN_GRACE_MS = 5_000

/**
 * Traffic of LOAD_BALANCER endpoints: every method and path below `/lb/{id}` (or any path of host
 * `{id}.{domain}`, rewritten to it in app.ts) goes to a ready worker's PORT through @fastify/reply-from
 * (undici), bodies streamed both ways without buffering. The API key is required as Bearer and is not
 * forwarded; hop-by-hop headers are dropped both ways (RFC 9110 §7.6.1). Bodies over the limit are 413,
 * a worker silent past the request timeout 504, a worker that fails or dies mid-request 502 (problems).
 */
export const loadBalancerRoutes =
  ({ endpoints, balancer, loadBalancer: cfg, endpointMetrics }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    // retryMethods empty: a request is never replayed to a worker (not even a GET answered 503).
    await app.register(replyFrom, {
      undici: {
        connections: 1024,
        pipelining: 1,
        keepAliveTimeout: 30_000,
        headersTimeout: cfg.requestTimeoutMs,
        bodyTimeout: cfg.requestTimeoutMs,
      },
      disableRequestLogging: true,
      retryMethods: [],
    })
    // Bodies are not parsed here: the request stream itself is handed on (reply-from pipes a stream body).
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', (_req, payload, done) => done(null, payload))

    const active = new Set<ServerResponse>()
    app.addHook('preClose', (done) => {
      if (active.size > 0) setTimeout(() => active.forEach((res) => res.destroy()), SHUTDOWN_GRACE_MS).unref()
      done()
    })

    const proxy = async (req: FastifyRequest<{ Params: { endpointId: string } }>, reply: FastifyReply) => {
      const ep = await endpoints.loadBalancer(req.principal, req.params.endpointId)
      // Counted once answered, whoever answered (a worker, or this proxy with a 413/499/502/504).
      if (endpointMetrics)
        reply.raw.once('close', () => endpointMetrics.proxied(ep.id, reply.raw.statusCode, reply.elapsedTime))
      const declared = Number(req.headers['content-length'] ?? 0)
      if (declared > cfg.maxBodyBytes) throw tooLarge(cfg.maxBodyBytes)
      const capacity = ep.scaling.type === 'REQUEST_COUNT' ? ep.scaling.requestCount : 1
      // The common case takes a worker at once; only a request that must wait needs to hear the client leave.
      let lease = balancer.tryAcquire(ep.id, capacity)
      if (!lease) {
        const gone = new AbortController()
        const onClose = () => gone.abort()
        reply.raw.once('close', onClose)
        lease = await balancer.wait(ep.id, capacity, gone.signal)
        reply.raw.off('close', onClose)
        if (gone.signal.aborted) {
          // The client left while it waited for a worker: nobody to answer.
          lease.release()
          return reply.code(499).send()
        }
      }
      const held = lease
      active.add(reply.raw)
      reply.raw.once('close', () => {
        active.delete(reply.raw)
        held.release()
      })

      let overLimit = false
      if (req.body instanceof Readable && req.headers['content-length'] === undefined)
        req.body = limited(req.body, cfg.maxBodyBytes, () => (overLimit = true))
      const prefix = `/lb/${ep.id}`
      const rawUrl = req.raw.url ?? '/'
      const path = rawUrl.slice(prefix.length).split('?')[0] || '/'
      const hostForm = req.originalUrl !== req.url
      const { host, port } = held.address
      return reply.from(
        `http://${host}:${port}${path.startsWith('/') ? path : `/${path}`}`,
        upstreamOptions(req, reply, {
          drop: ['authorization', FORWARDED_BY],
          upstream: `worker ${held.workerId} of endpoint ${ep.id}`,
          timeoutMs: cfg.requestTimeoutMs,
          extend: (r, headers) =>
            forwardedHeaders(headers, {
              ip: r.ip,
              host: r.headers.host,
              proto: r.protocol,
              prefix: hostForm ? null : prefix,
            }),
          intercept: () => overLimit && (sendProblem(reply, 413, tooLarge(cfg.maxBodyBytes).detail), true),
        }),
      )
    }

    // Traffic, not API: access by method like job operations (RESTRICTED keys on their own endpoints),
    // no management quota, not in the OpenAPI document.
    const config = { restricted: 'jobs' as const, quota: false }
    for (const url of ['/lb/:endpointId', '/lb/:endpointId/*']) {
      app.route({ method: METHODS, url, exposeHeadRoute: false, config, schema: { hide: true }, handler: proxy })
    }
  }

function tooLarge(max: number): DomainError {
  // Answered before the body is read: the connection is closed rather than left with the body's remainder.
  return new DomainError(
    'payload_too_large',
    `request body is larger than the ${max}-byte limit of load-balancer requests`,
    undefined,
    { connection: 'close' },
  )
}

/** The body, failing once more than `max` bytes went through (a chunked body declares no length). */
function limited(body: Readable, max: number, onOver: () => void): Readable {
  let seen = 0
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length
      if (seen <= max) return cb(null, chunk)
      onOver()
      cb(tooLarge(max))
    },
  })
  return pipeline(body as IncomingMessage, counter, () => {})
}
