import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import FindMyWay from 'find-my-way'
import type { CatalogService } from '../catalog/CatalogService.js'
import type { AccountService } from '../services/AccountService.js'
import type { EndpointService } from '../services/EndpointService.js'
import type { JobService } from '../services/JobService.js'
import type { WorkerJobService } from '../services/WorkerJobService.js'
import type { WorkerService } from '../services/WorkerService.js'
import type { NetworkVolumeService } from '../services/NetworkVolumeService.js'
import type { RegistryService } from '../services/RegistryService.js'
import type { SshKeyService } from '../services/SshKeyService.js'
import type { TemplateService } from '../services/TemplateService.js'
import { Problem } from '../contract/problem.js'
import { registerAuth } from './auth.js'
import type { RateLimiter } from '../ratelimit/RateLimiter.js'
import { registerProblemHandling } from './problem.js'
import { registerRateLimits } from './rateLimit.js'
import { adminRoutes } from './routes/admin.js'
import { catalogRoutes } from './routes/catalog.js'
import { jobRoutes } from './routes/jobs.js'
import { workerRoutes } from './routes/workers.js'
import { workerProtocolRoutes } from './routes/workerProtocol.js'
import { accountRoutes } from './routes/account.js'
import { networkVolumeRoutes } from './routes/networkVolumes.js'
import { registryRoutes } from './routes/registries.js'
import { serverlessRoutes } from './routes/serverless.js'
import { templateRoutes } from './routes/templates.js'
import { validatorCompiler } from './validation.js'

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
  /** The worker protocol (workers). */
  workerJobs: WorkerJobService
  workers: WorkerService
  /** Base URL clients use, for links in responses (e.g. endpoint requestUrls). */
  publicUrl: () => string
}

export type App = FastifyInstance<any, any, any, FastifyBaseLogger, TypeBoxTypeProvider>

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

/** Builds the HTTP application without listening, so tests and main.ts share it. */
export async function buildApp(deps: AppDeps): Promise<App> {
  const app = Fastify({
    loggerInstance: deps.logger || undefined,
    logger: deps.logger ? undefined : false,
    bodyLimit: deps.bodyLimit,
    requestIdHeader: 'x-request-id',
    // Per-request lines would dominate the log and cost time on the job hot path; errors are still logged.
    logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { ignoreTrailingSlash: true },
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.setValidatorCompiler(validatorCompiler())
  // The management API speaks JSON only; any other body is a 415 rather than a string that fails validation.
  app.removeContentTypeParser('text/plain')
  // An empty body labelled JSON is no body: clients such as the Python runpod SDK send the header on every
  // request, also on bodyless POSTs (cancel, purge-queue). Keys that could pollute prototypes stay refused.
  const json = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined)
    json(req, body as string, (err, parsed) => {
      if (err && parsesAsPlainJson(body as string)) {
        // Valid JSON refused by the secure parser: it carries a prototype key. Say so instead of "not valid JSON".
        const e = new SyntaxError('JSON keys "__proto__" and "constructor.prototype" are not accepted') as SyntaxError & { statusCode: number }
        e.statusCode = 400
        return done(e, undefined)
      }
      done(err, parsed)
    })
  })

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
      if ((METHODS as readonly string[]).includes(m) && !shapes.find(m as never, route.url)) shapes.on(m as never, route.url, () => {})
    }
  })
  registerProblemHandling(app, (url) => METHODS.filter((m) => shapes.find(m, url)))

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Hangar: Compute Platform REST API v2',
        version: '2.0.0',
        description: 'Self-hosted implementation of the Compute Platform REST API v2. Routes under /v2/admin are Hangar extensions.',
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

  registerAuth(app, deps.accounts)
  registerRateLimits(app, deps.rateLimiter)

  app.get('/v2/openapi.json', { schema: { hide: true }, config: { access: 'public' } }, async () => app.swagger())
  await app.register(adminRoutes(deps))
  await app.register(catalogRoutes(deps))
  await app.register(templateRoutes(deps))
  await app.register(serverlessRoutes(deps))
  await app.register(registryRoutes(deps))
  await app.register(networkVolumeRoutes(deps))
  await app.register(accountRoutes(deps))
  await app.register(jobRoutes(deps))
  await app.register(workerProtocolRoutes(deps))
  await app.register(workerRoutes(deps))
  return app
}

function parsesAsPlainJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
