import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { DomainError } from '../domain/errors.js'
import type { PromMetrics } from '../metrics/PromMetrics.js'
import type { AccountService } from '../services/accounts/AccountService.js'

/** What /metrics needs; without `metrics` neither the route nor the hook exists. */
export interface MetricsDeps {
  metrics?: PromMetrics
  /** A bearer token for scrapers, accepted besides admin keys (so Prometheus needs no admin key). */
  metricsToken?: string
  accounts: AccountService
}

/**
 * Times every response by route pattern (not raw URL: ids would make a series per job), counts 429s, and
 * serves the Prometheus text format at GET /metrics for admin keys and the scrape token.
 */
export function registerMetrics(app: FastifyInstance, deps: MetricsDeps): void {
  const { metrics, metricsToken, accounts } = deps
  if (!metrics) return
  // A callback hook, not an async one: no promise per response on the job hot path.
  app.addHook('onResponse', (req, reply, done) => {
    const route = routeLabel(req.routeOptions.url)
    metrics.httpRequest({ method: req.method, route, statusCode: reply.statusCode, seconds: reply.elapsedTime / 1000 })
    if (reply.statusCode === 429)
      metrics.rateLimited(req.routeOptions.config.jobOperation ? 'job_operation' : 'management')
    done()
  })
  app.get('/metrics', { schema: { hide: true }, config: { access: 'public', quota: false } }, async (req, reply) => {
    await authorizeScrape(req, accounts, metricsToken)
    const { contentType, body } = await metrics.render()
    return reply.type(contentType).send(body)
  })
}

/**
 * The route label of a request: its pattern, with the console's files (one route per hashed asset, new
 * names at every build) grouped as `/console/*`, and requests no route matched as `unmatched`.
 */
export function routeLabel(pattern: string | undefined): string {
  if (pattern === undefined) return 'unmatched'
  if (pattern === '/console' || pattern.startsWith('/console/')) return '/console/*'
  return pattern
}

async function authorizeScrape(
  req: FastifyRequest,
  accounts: AccountService,
  token: string | undefined,
): Promise<void> {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(req.headers.authorization ?? '')
  if (!m)
    throw new DomainError(
      'unauthorized',
      'missing credentials: send Authorization: Bearer <admin key or metrics token>',
    )
  if (token !== undefined && sameSecret(m[1], token)) return
  const principal = await accounts.authenticate(m[1])
  if (!principal.admin) throw new DomainError('forbidden', '/metrics needs an admin key or the metrics token')
}

/** Constant-time comparison of two strings of any length (hashed first so lengths do not leak). */
function sameSecret(a: string, b: string): boolean {
  const h = (s: string) => createHash('sha256').update(s).digest()
  return timingSafeEqual(h(a), h(b))
}
