import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/** Where the built console lives; see `console/vite.config.ts`. */
export interface ConsoleOptions {
  /** The vite build output (index.html and hashed assets). */
  dir: string
  /** The manual (the package's docs/): served for the console's Docs page, built console or not. */
  docsDir?: string
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
  app.get('/favicon.ico', async (_req, reply) =>
    reply.header('cache-control', 'public, max-age=86400').redirect('/console/favicon.svg', 301),
  )
  const index = join(opts.dir, 'index.html')
  const built = existsSync(index)
  // Running from sources without `npm run build` (e.g. a test run): say how to get the console.
  const missing = async (_req: FastifyRequest, reply: FastifyReply) =>
    reply
      .code(503)
      .type('text/plain; charset=utf-8')
      .send('The web console is not built: run `npm run build` (npm start and npm test do).\n')
  const page = async (_req: FastifyRequest, reply: FastifyReply) =>
    reply.header('cache-control', 'no-cache').sendFile('index.html', opts.dir)
  if (opts.docsDir && existsSync(opts.docsDir)) docsRoutes(app, opts.docsDir, built ? page : missing)
  if (!built) {
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
  // '/console/' itself is index.html, registered by the static plugin (with ignoreTrailingSlash, '/console' too).
  app.get('/console/*', page)
}

/** What the manual serves: Markdown pages and the screenshots they show, nothing else of the folder. */
const DOC_FILE = /^(?:[A-Za-z0-9_-]+\/)*[A-Za-z0-9_-]+\.(md|png)$/
const DOC_TYPES: Record<string, string> = { md: 'text/markdown; charset=utf-8', png: 'image/png' }

/**
 * The manual, so that an installation carries its own: `GET /console/docs/<path>.md` (and `.png`) answers a
 * file of `dir` (the package's docs/), `GET /console/docs/index.json` lists its pages, and any other path
 * below /console/docs/ is a page of the console (its Docs page). Only names of letters, digits, `-` and `_`
 * in folders of the same are served: no dot files, no `..`, no other kinds of file; and only where the file,
 * links resolved, lies inside `dir`.
 */
function docsRoutes(
  app: FastifyInstance,
  dir: string,
  page: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
): void {
  const root = realpathSync(dir)
  app.get('/console/docs/index.json', async (_req, reply) =>
    reply.header('cache-control', 'no-cache').send({ pages: docPages(root) }),
  )
  app.get('/console/docs/*', async (req, reply) => {
    const rel = (req.params as { '*': string })['*']
    const kind = DOC_FILE.exec(rel)?.[1]
    if (!kind) return page(req, reply)
    let file: string
    try {
      file = realpathSync(join(root, rel))
    } catch {
      return reply
        .code(404)
        .type('application/problem+json')
        .send({ title: 'Not Found', status: 404, detail: `no page ${rel} in the manual` })
    }
    if (!file.startsWith(root + sep))
      return reply
        .code(404)
        .type('application/problem+json')
        .send({ title: 'Not Found', status: 404, detail: `no page ${rel} in the manual` })
    return reply
      .header('cache-control', 'no-cache')
      .header('x-content-type-options', 'nosniff')
      .type(DOC_TYPES[kind])
      .send(await readFile(file))
  })
}

/** The manual's pages with their titles: in the order docs/README.md links them, then any others by path. */
export function docPages(root: string): Array<{ path: string; title: string }> {
  const pages: string[] = []
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name)
      if (entry.isDirectory() && DOC_FILE.test(`${entry.name}/x.md`)) walk(path)
      else if (entry.isFile() && DOC_FILE.test(relative(root, path).split(sep).join('/')) && entry.name.endsWith('.md'))
        pages.push(relative(root, path).split(sep).join('/'))
    }
  }
  walk(root)
  const index = pages.includes('README.md') ? readFileSync(join(root, 'README.md'), 'utf8') : ''
  const order = [
    'README.md',
    ...[...index.matchAll(/\]\(([^)#\s]+\.md)(?:#[^)]*)?\)/g)].map((m) => m[1].replace(/^\.\//, '')),
  ]
  const rank = (p: string) => (order.includes(p) ? order.indexOf(p) : order.length)
  pages.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
  return pages.map((path) => ({
    path,
    title: /^# (.+)$/m.exec(readFileSync(join(root, path), 'utf8'))?.[1].trim() ?? path,
  }))
}
