import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import FindMyWay from 'find-my-way'
import type { CatalogService } from '../catalog/CatalogService.js'
import type { AccountService } from '../services/accounts/AccountService.js'
import type { BillingService } from '../services/billing/BillingService.js'
import type { QuotaService } from '../services/accounts/QuotaService.js'
import type { EndpointService } from '../services/endpoints/EndpointService.js'
import type { JobService } from '../services/jobs/JobService.js'
import type { OpenAiService } from '../services/jobs/OpenAiService.js'
import type { LoadBalancer } from '../services/loadBalancer/LoadBalancer.js'
import type { LoadBalancerConfig } from '../services/loadBalancer/loadBalancerConfig.js'
import { lbHostEndpoint } from '../domain/endpoints/endpoint.js'
import { registerLbUpgrades } from './lbUpgrade.js'
import { registerLeaderForwarding, type LeaderView } from './leaderForwarding.js'
import { loadBalancerRoutes } from './routes/loadBalancer.js'
import type { WorkerJobService } from '../services/jobs/WorkerJobService.js'
import type { WorkerService } from '../services/workers/WorkerService.js'
import type { NetworkVolumeService } from '../services/storage/NetworkVolumeService.js'
import type { RegistryService } from '../services/storage/RegistryService.js'
import type { SshKeyService } from '../services/accounts/SshKeyService.js'
import type { TemplateService } from '../services/endpoints/TemplateService.js'
import type { PodService } from '../services/pods/PodService.js'
import type { ClusterService } from '../services/pods/ClusterService.js'
import type { AuditLog } from '../services/audit/AuditLog.js'
import type { SecretService } from '../services/secrets/SecretService.js'
import { registerAudit } from './audit.js'
import { registerSecretReferenceCheck } from './secretReferences.js'
import { auditRoutes } from './routes/audit.js'
import { secretRoutes } from './routes/secrets.js'
import { memberRoutes } from './routes/members.js'
import { oidcRoutes } from './routes/oidc.js'
import type { SignInThrottle } from '../services/accounts/SignInThrottle.js'
import type { OidcSignIn } from '../services/accounts/OidcSignIn.js'
import { Problem } from '../contract/problem.js'
import { registerAuth } from './auth.js'
import { registerMetrics } from './metrics.js'
import { registerProbes } from './probes.js'
import { consoleRoutes } from './console.js'
import type { PromMetrics } from '../metrics/PromMetrics.js'
import type { EndpointMetricsRecorder } from '../services/endpoints/EndpointMetricsRecorder.js'
import type { PodLinks } from '../services/pods/PodLinks.js'
import type { RateLimiter } from '../ratelimit/RateLimiter.js'
import { registerProblemHandling } from './problem.js'
import { registerRateLimits } from './rateLimit.js'
import { registerRequestLog } from './requestLog.js'
import { adminRoutes } from './routes/admin.js'
import { podProxyRoutes } from './routes/podProxy.js'
import { podRoutes } from './routes/pods.js'
import { clusterRoutes } from './routes/clusters.js'
import { billingRoutes } from './routes/billing.js'
import { catalogRoutes } from './routes/catalog.js'
import { jobRoutes } from './routes/jobs.js'
import { openAiRoutes } from './routes/openai.js'
import { workerRoutes } from './routes/workers.js'
import { workerProtocolRoutes } from './routes/workerProtocol.js'
import { accountRoutes } from './routes/account.js'
import { quotaRoutes } from './routes/quotas.js'
import { networkVolumeRoutes } from './routes/networkVolumes.js'
import { registryRoutes } from './routes/registries.js'
import { serverlessRoutes } from './routes/serverless.js'
import { templateRoutes } from './routes/templates.js'
import { retiredV1Routes } from './routes/retiredV1.js'
import { validatorCompiler } from './validation.js'
import {
  clientErrorHandler,
  frameworkErrorHandler,
  registerHostRequired,
  registerRawRequestAnswers,
} from './clientErrors.js'
import type { LimitsConfig } from './limitsConfig.js'
import { registerBodyBudget } from './bodyBudget.js'
import { registerJsonParser } from './jsonParser.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, for the OpenAPI completeness test and 405 answers. */
    hangarRoutes: ReadonlyArray<{ method: string; url: string }>
  }
}

/** Everything the HTTP layer needs; built by main.ts (or a test) and handed in. */
export interface AppDeps {
  logger: FastifyBaseLogger | false
  bodyLimit: number
  /** Deadlines, JSON depth and body bytes in flight. */
  limits: LimitsConfig
  accounts: AccountService
  catalog: CatalogService
  templates: TemplateService
  endpoints: EndpointService
  registries: RegistryService
  networkVolumes: NetworkVolumeService
  sshKeys: SshKeyService
  rateLimiter: RateLimiter
  /** Queue job operations (clients). */
  jobs: JobService
  /** The OpenAI-compatible route of queue endpoints. */
  openai: OpenAiService
  /** The worker protocol (workers). */
  workerJobs: WorkerJobService
  workers: WorkerService
  /** Chooses the worker of each request to a LOAD_BALANCER endpoint. */
  balancer: LoadBalancer
  loadBalancer: LoadBalancerConfig
  pods: PodService
  clusters: ClusterService
  /** The /v2/billing histories. */
  billing: BillingService
  /** Quotas and spend limits per account; without it the quota routes answer 503. */
  quotas?: QuotaService
  /** Accounts' secrets (/v2/secrets; env references checked on every write with an env). */
  secrets: SecretService
  /** The audit log every change is recorded in (/v2/audit). */
  audit: AuditLog
  /** Limits on failed password sign-ins, and the OpenID Connect provider when one is configured. */
  signIns?: { throttle: SignInThrottle; oidc?: OidcSignIn }
  /** Base URL clients use, for links in responses (e.g. endpoint requestUrls). */
  publicUrl: () => string
  /** Prometheus metrics; without it there is no /metrics route. */
  metrics?: PromMetrics
  /** Browser links to pods' HTTP ports (tokens the pod proxy accepts instead of a key). */
  podLinks?: PodLinks
  /** Endpoint metrics in time buckets (GET /v2/serverless/{id}/metrics, the account overview, LB requests). */
  endpointMetrics?: EndpointMetricsRecorder
  /** Bearer token accepted by /metrics besides admin keys. */
  metricsToken?: string
  /** The built web console (dist/console); without it there is no /console. */
  consoleDir?: string
  /** The manual (the package's docs/), served under /console/docs/ for the console's Docs page. */
  docsDir?: string
  /**
   * Several control-plane replicas: what needs the leader is forwarded to it from a follower (`self`: this
   * replica's URL, named in the forwarded request). Absent for a single process, which serves everything.
   */
  replicas?: { leadership: LeaderView; self: () => string }
  /** True while the process drains before it stops: /readyz answers 503. */
  draining?: () => boolean
}

export type App = FastifyInstance<any, any, any, FastifyBaseLogger, TypeBoxTypeProvider>

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const
/** Longest path parameter: every id of the API is at most 128 characters (contract/common Id). */
const MAX_PARAM_LENGTH = 128

/** Builds the HTTP application without listening, so tests and main.ts share it. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const lbDomain = deps.loadBalancer.domain
  const app = Fastify({
    loggerInstance: deps.logger || undefined,
    logger: deps.logger ? undefined : false,
    bodyLimit: deps.bodyLimit,
    requestIdHeader: 'x-request-id',
    // fast-json-stringify picks the branch of a union (an endpoint's requestUrls) by validating the value
    // against each: without this every GET of an endpoint ran eight URI regular expressions on our own URLs.
    // Formats stay in the schemas (and OpenAPI); they are checked on input, not on what we write.
    serializerOpts: { ajv: { validateFormats: false } },
    // Per-request lines would dominate the log and cost time on the job hot path; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // Slow clients: Node cuts a request whose headers or whole self have not arrived in time (answered 408
    // by clientErrorHandler). Only reception counts, so long-polls and streams run as long as they need.
    requestTimeout: deps.limits.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(deps.limits.headersTimeoutMs, deps.limits.requestTimeoutMs),
      // Node checks the deadlines on this interval (30 s by default, which would stretch them).
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(deps.limits.headersTimeoutMs / 4))),
      // A missing Host is answered as a problem by registerHostRequired, not with Node's empty 400.
      requireHostHeader: false,
    },
    clientErrorHandler: clientErrorHandler(deps.limits),
    frameworkErrors: frameworkErrorHandler(MAX_PARAM_LENGTH),
    // Host-based load-balancer addressing: `{id}.{domain}/path` is served as `/lb/{id}/path`.
    ...(lbDomain
      ? {
          rewriteUrl: (req: { headers: { host?: string }; url?: string }) =>
            rewriteLbHost(req.headers.host, req.url ?? '/', lbDomain),
        }
      : {}),
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.setValidatorCompiler(validatorCompiler())
  // The management API speaks JSON only; any other body is a 415 rather than a string that fails validation.
  app.removeContentTypeParser('text/plain')
  // One JSON parser for every route (see jsonParser): UTF-8, bounded depth, no prototype keys.
  registerJsonParser(app, { bodyLimit: deps.bodyLimit, maxDepth: deps.limits.maxJsonDepth })

  // Every route pattern by method, to tell "wrong method" (405) from "no such path" (404).
  const shapes = FindMyWay({ ignoreTrailingSlash: true })
  const routes: Array<{ method: string; url: string }> = []
  app.decorate('hangarRoutes', routes)
  app.addHook('onRoute', (route) => {
    for (const m of [route.method].flat()) if (m !== 'HEAD') routes.push({ method: m, url: route.url })
    // Every route can fail with a problem; declaring it once here keeps the OpenAPI honest without
    // repeating it in each route.
    if (route.url.startsWith('/v2/') && route.schema && !route.schema.hide) {
      const problem = { description: 'RFC 9457 problem', content: { 'application/problem+json': { schema: Problem } } }
      route.schema.response = { ...(route.schema.response as object), '4XX': problem, '5XX': problem }
    }
    for (const m of [route.method].flat()) {
      if ((METHODS as readonly string[]).includes(m) && !shapes.find(m as never, route.url))
        shapes.on(m as never, route.url, () => {})
    }
  })
  registerProblemHandling(app, (url) => METHODS.filter((m) => shapes.find(m, url)))

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Hangar: Compute Platform REST API v2',
        version: '2.0.0',
        description:
          'Self-hosted implementation of the Compute Platform REST API v2. Routes under /v2/admin are Hangar extensions.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  })
  app.addHook('onRoute', (route) => {
    // swagger-ui's own routes are static files for people; they need no key.
    if (route.url.startsWith('/docs')) route.config = { ...(route.config ?? {}), access: 'public' }
  })
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { url: '/v2/openapi.json' } as never })

  registerHostRequired(app)
  registerRawRequestAnswers(app.server)
  // First of the request hooks after the Host check: a follower forwards what needs the leader before authenticating or counting it.
  if (deps.replicas) await registerLeaderForwarding(app, deps.replicas)
  registerAuth(app, deps.accounts)
  registerRateLimits(app, deps.rateLimiter)
  // After authentication: a caller without a valid key is refused before it can hold any budget.
  registerBodyBudget(app, deps.limits.bodyBytesInFlight, deps.bodyLimit)
  registerMetrics(app, deps)
  // Every change is recorded once it is answered (refusals too); env naming missing secrets is refused.
  registerAudit(app, deps.audit)
  registerSecretReferenceCheck(app, deps.secrets)
  registerProbes(app, deps.replicas, deps.draining)

  app.get('/v2/openapi.json', { schema: { hide: true }, config: { access: 'public' } }, async () => app.swagger())
  // A person opening the server's address in a browser lands on something readable: the console when there
  // is one (it redirects / itself), else the API docs.
  if (!deps.consoleDir)
    app.get('/', { schema: { hide: true }, config: { access: 'public' } }, async (_req, reply) =>
      reply.redirect('/docs'),
    )
  registerRequestLog(app)
  await app.register(adminRoutes(deps))
  await app.register(catalogRoutes(deps))
  await app.register(templateRoutes(deps))
  await app.register(serverlessRoutes(deps))
  await app.register(registryRoutes(deps))
  await app.register(networkVolumeRoutes(deps))
  await app.register(accountRoutes(deps))
  await app.register(jobRoutes(deps))
  await app.register(openAiRoutes(deps))
  await app.register(workerProtocolRoutes(deps))
  await app.register(workerRoutes(deps))
  await app.register(podRoutes(deps))
  await app.register(podProxyRoutes(deps))
  await app.register(clusterRoutes(deps))
  await app.register(billingRoutes(deps))
  await app.register(quotaRoutes(deps))
  await app.register(secretRoutes(deps))
  await app.register(auditRoutes(deps))
  await app.register(memberRoutes(deps))
  await app.register(oidcRoutes(deps))
  if (deps.consoleDir) await app.register(consoleRoutes, { dir: deps.consoleDir, docsDir: deps.docsDir })
  await app.register(loadBalancerRoutes(deps))
  await app.register(retiredV1Routes(deps))
  registerLbUpgrades(app.server, {
    accounts: deps.accounts,
    endpoints: deps.endpoints,
    balancer: deps.balancer,
    domain: lbDomain,
    replicas: deps.replicas,
  })
  return app
}

function rewriteLbHost(host: string | undefined, url: string, domain: string): string {
  const id = lbHostEndpoint(host, domain)
  return id ? `/lb/${id}${url.startsWith('/') ? url : `/${url}`}` : url
}
