import { execFileSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { request } from 'node:http'
import { dirname, join, relative, resolve } from 'node:path'
import Fastify from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anchors, linkTargets, renderDoc } from '../console/src/markdown.js'
import { configSettings, GENERATED_DOCS, UNDESCRIBED_SETTINGS } from '../scripts/docsReference.js'
import { consoleRoutes } from '../src/api/console.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const ROOT = join(import.meta.dirname, '..')

/** README.md and every Markdown file under docs/, relative to the repository root. */
function markdownFiles(): string[] {
  const out = ['README.md']
  const walk = (dir: string) => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${e.name}`
      if (e.isDirectory()) walk(path)
      else if (e.name.endsWith('.md')) out.push(path)
    }
  }
  walk('docs')
  return out
}

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8')
const external = (href: string) => /^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')

describe('the manual (README.md and docs/)', () => {
  it.each(Object.keys(GENERATED_DOCS))('%s is what `npm run docs` generates from the code', (file) => {
    expect(existsSync(join(ROOT, file)), `${file} is missing: run \`npm run docs\``).toBe(true)
    // On a difference: run `npm run docs` and commit the file.
    expect(read(file)).toBe(GENERATED_DOCS[file]())
  })

  it('describes every setting of the configuration schema (the reference prints the descriptions)', () => {
    expect(configSettings().undescribed).toEqual(Object.keys(UNDESCRIBED_SETTINGS))
  })

  it('has no broken relative link: every file exists, every anchor names a heading of its file', () => {
    const broken: string[] = []
    for (const file of markdownFiles()) {
      for (const href of linkTargets(read(file))) {
        if (external(href)) continue
        const [path, hash] = href.split('#')
        const target = path ? relative(ROOT, resolve(ROOT, dirname(file), decodeURI(path))) : file
        if (!existsSync(join(ROOT, target))) broken.push(`${file}: ${href} (no file ${target})`)
        else if (hash && target.endsWith('.md') && !anchors(read(target)).includes(hash))
          broken.push(`${file}: ${href} (no heading #${hash} in ${target})`)
      }
    }
    expect(broken).toEqual([])
  })

  it("links every page from docs/README.md, the manual's index", () => {
    const linked = new Set(
      linkTargets(read('docs/README.md'))
        .filter((h) => !external(h))
        .map((h) => relative(ROOT, resolve(ROOT, 'docs', h.split('#')[0]))),
    )
    const pages = markdownFiles().filter((f) => f.startsWith('docs/') && f !== 'docs/README.md')
    expect(pages.filter((p) => !linked.has(p))).toEqual([])
  })

  it('keeps the README a front door: under 200 lines, starting with the two commands that set up everything', () => {
    const readme = read('README.md')
    expect(readme.split('\n').length).toBeLessThan(200)
    const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1].trim())
    expect(blocks.slice(0, 2)).toEqual(['npm ci && npm start', 'npm ci && npm test'])
  })

  it('lets CI find every tagged shell block it runs (.ci/readme-steps.sh), each in one file', () => {
    const tags = new Set<string>()
    for (const f of readdirSync(join(ROOT, '.ci'))) {
      if (!f.endsWith('.sh') && f !== 'run') continue
      for (const m of read(`.ci/${f}`).matchAll(/hangar_readme_steps ([a-z][\w-]*)/g)) tags.add(m[1])
    }
    expect([...tags].sort()).toEqual(['containers', 'containers-check', 'containers-install'])
    for (const tag of tags) {
      const run = (fn: string) =>
        execFileSync('bash', ['-c', `source .ci/readme-steps.sh && ${fn} ${tag}`], {
          cwd: ROOT,
          encoding: 'utf8',
        }).trim()
      expect(run('hangar_readme_file')).toBe('docs/containers.md')
      expect(run('hangar_readme_block')).not.toBe('')
    }
    expect(
      execFileSync('bash', ['-c', 'source .ci/readme-steps.sh && hangar_readme_block containers-check'], {
        cwd: ROOT,
        encoding: 'utf8',
      }).trim(),
    ).toBe('hangar engine check')
  })
})

describe("the console's Markdown", () => {
  it('shows raw HTML as text, drops comments, and keeps links to the manual, http(s) or mailto', () => {
    const md = [
      '# Title',
      '',
      '<!-- ci: tag -->',
      '<script>alert(1)</script>',
      '',
      'a <b onclick="x()">b</b> [js](javascript:alert(1)) [web](https://example.com/) [cli](reference/cli.md#hangar-serve)',
      '[repo](../bench/RESULTS.md) [here](#title) ![shot](console-pods.png) ![away](https://example.com/x.png)',
      '',
      "## Capacity: the catalog's stock is real",
    ].join('\n')
    const { html, title } = renderDoc(md, 'getting-started.md')
    expect(title).toBe('Title')
    expect(html).not.toContain('<!--')
    expect(html).not.toMatch(/<script|<b |javascript:/)
    expect(html).toContain('&lt;script&gt;')
    expect(html).toContain('<a href="https://example.com/" target="_blank" rel="noreferrer">web</a>')
    expect(html).toContain('<a href="/console/docs/reference/cli#hangar-serve">cli</a>')
    expect(html).toContain('<a href="#title">here</a>')
    expect(html).toContain('title="in Hangar&#39;s repository: ../bench/RESULTS.md">repo</span>')
    expect(html).toContain('<img src="/console/docs/console-pods.png" alt="shot">')
    expect(html).not.toContain('example.com/x.png')
    expect(html).toContain('<h2 id="capacity-the-catalogs-stock-is-real">')
    expect(anchors(md)).toEqual(['title', 'capacity-the-catalogs-stock-is-real'])
  })
})

/** A GET with the path sent as written (fetch would resolve `..` before sending). */
function rawGet(url: string, path: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((done, fail) => {
    const req = request(new URL(url), { path, method: 'GET' }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c) => (body += c))
      res.on('end', () => done({ status: res.statusCode!, type: String(res.headers['content-type'] ?? ''), body }))
    })
    req.on('error', fail)
    req.end()
  })
}

describe('serving the manual at /console/docs/', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'hangar-docs-'))
  const app = Fastify()
  let url = ''
  beforeAll(async () => {
    mkdirSync(join(tmp, 'console'))
    writeFileSync(join(tmp, 'console', 'index.html'), '<div id="app"></div>')
    mkdirSync(join(tmp, 'docs', 'reference'), { recursive: true })
    writeFileSync(join(tmp, 'docs', 'README.md'), '# The index\n\n[B](b.md) [CLI](reference/cli.md)\n')
    writeFileSync(join(tmp, 'docs', 'a.md'), '# A page\n')
    writeFileSync(join(tmp, 'docs', 'b.md'), '# B page\n')
    writeFileSync(join(tmp, 'docs', 'reference', 'cli.md'), '# CLI reference\n')
    writeFileSync(join(tmp, 'docs', 'shot.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]))
    writeFileSync(join(tmp, 'docs', 'tool.ts'), 'secret')
    writeFileSync(join(tmp, 'docs', '.hidden.md'), 'secret')
    writeFileSync(join(tmp, 'outside.md'), 'secret')
    symlinkSync(join(tmp, 'outside.md'), join(tmp, 'docs', 'escape.md'))
    await app.register(consoleRoutes, { dir: join(tmp, 'console'), docsDir: join(tmp, 'docs') })
    url = await app.listen({ port: 0, host: '127.0.0.1' })
  })
  afterAll(async () => {
    await app.close()
    rmSync(tmp, { recursive: true, force: true })
  })

  it('answers a page as Markdown, a screenshot as PNG, and the list of pages in the index order', async () => {
    const page = await fetch(`${url}/console/docs/reference/cli.md`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/markdown; charset=utf-8')
    expect(page.headers.get('x-content-type-options')).toBe('nosniff')
    expect(await page.text()).toBe('# CLI reference\n')
    const png = await fetch(`${url}/console/docs/shot.png`)
    expect(png.headers.get('content-type')).toBe('image/png')
    const index = await (await fetch(`${url}/console/docs/index.json`)).json()
    expect(index.pages).toEqual([
      { path: 'README.md', title: 'The index' },
      { path: 'b.md', title: 'B page' },
      { path: 'reference/cli.md', title: 'CLI reference' },
      { path: 'a.md', title: 'A page' },
    ])
  })

  it("answers other paths below /console/docs/ with the console's page, and never a file outside the manual", async () => {
    for (const path of [
      '/console/docs',
      '/console/docs/',
      '/console/docs/getting-started',
      '/console/docs/tool.ts',
      '/console/docs/../outside.md',
      '/console/docs/%2e%2e/outside.md',
      '/console/docs/.hidden.md',
      '/console/docs/reference/..%2f..%2foutside.md',
    ]) {
      const r = await rawGet(url, path)
      expect(r.body, path).not.toBe('secret')
      if (r.status === 200) expect(r.body, path).toBe('<div id="app"></div>')
    }
    for (const path of ['/console/docs/escape.md', '/console/docs/missing.md']) {
      const r = await rawGet(url, path)
      expect(r.status, path).toBe(404)
      expect(r.body, path).not.toBe('secret')
    }
  })
})

describe("an installation's own manual", () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer()
  })
  afterAll(() => s.stop())

  it('is served from the docs/ folder, with no key', async () => {
    const res = await fetch(`${s.url}/console/docs/getting-started.md`)
    expect(res.status).toBe(200)
    expect(await res.text()).toBe(read('docs/getting-started.md'))
    const index = (await (await fetch(`${s.url}/console/docs/index.json`)).json()) as {
      pages: Array<{ path: string; title: string }>
    }
    expect(index.pages[0]).toEqual({ path: 'README.md', title: "Hangar's manual" })
    expect(index.pages.map((p) => p.path).sort()).toEqual(
      markdownFiles()
        .filter((f) => f.startsWith('docs/'))
        .map((f) => f.slice('docs/'.length))
        .sort(),
    )
  })
})
