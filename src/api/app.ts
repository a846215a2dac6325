import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import FindMyWay from 'find-my-way'
import type { CatalogService } from '../catalog/CatalogService.js'
import type { AccountService } from '../services/AccountService.js'
import { Problem } from '../contract/problem.js'
import { registerAuth } from './auth.js'
import { registerProblemHandling } from './problem.js'
import { adminRoutes } from './routes/admin.js'
import { catalogRoutes } from './routes/catalog.js'
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

  app.get('/v2/openapi.json', { schema: { hide: true }, config: { access: 'public' } }, async () => app.swagger())
  await app.register(adminRoutes(deps))
  await app.register(catalogRoutes(deps))
  return app
}
