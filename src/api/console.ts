import { existsSync } from 'node:fs'
import { join } from 'node:path'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/** Where the built console lives; see `console/vite.config.ts`. */
export interface ConsoleOptions {
  /** The vite build output (index.html and hashed assets). */
  dir: string
}

/**
 * The web console: static files under /console/ (built at build time, no CDN), any other /console/ path
 * answered with index.html so client-side routes survive a reload, and / redirected to /console/. Every
 * route is public: the files hold no data, the console asks the API with the key the user signs in with.
 */
export async function consoleRoutes(app: FastifyInstance, opts: ConsoleOptions): Promise<void> {
  app.addHook('onRoute', (route) => {
    route.config = { ...(route.config ?? {}), access: 'public' }
    route.schema = { ...(route.schema ?? {}), hide: true }
  })
  app.get('/', async (_req, reply) => reply.redirect('/console/'))
  // Browsers ask for /favicon.ico whatever the page says: send them to the console's icon.
  app.get('/favicon.ico', async (_req, reply) => reply.header('cache-control', 'public, max-age=86400').redirect('/console/favicon.svg', 301))
  const index = join(opts.dir, 'index.html')
  if (!existsSync(index)) {
    // Running from sources without `npm run build` (e.g. a test run): say how to get the console.
    const missing = async (_req: FastifyRequest, reply: FastifyReply) =>
      reply.code(503).type('text/plain; charset=utf-8').send('The web console is not built: run `npm run build` (npm start and npm test do).\n')
    app.get('/console', missing)
    app.get('/console/*', missing)
    return
  }
  await app.register(fastifyStatic, {
    root: opts.dir,
    prefix: '/console/',
    // One route per built file, found at start; unknown paths fall through to the client-side router below.
    wildcard: false,
    cacheControl: false,
    setHeaders(reply, path) {
      // Vite names assets by content hash: they never change, so browsers may keep them.
      reply.header('cache-control', path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache')
    },
  })
  const page = async (_req: FastifyRequest, reply: FastifyReply) => reply.header('cache-control', 'no-cache').sendFile('index.html', opts.dir)
  // '/console/' itself is index.html, registered by the static plugin (with ignoreTrailingSlash, '/console' too).
  app.get('/console/*', page)
}
