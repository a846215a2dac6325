import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

const ROOT = join(import.meta.dirname, '..')
const built = existsSync(join(ROOT, 'dist/console/index.html'))

describe('serving the console', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer()
  })
  afterAll(() => s.stop())

  it('redirects / to /console/, with no key needed', async () => {
    const res = await fetch(s.url + '/', { redirect: 'manual' })
    expect(res.status).toBe(302)
    expect(res.headers.get('location')).toBe('/console/')
  })

  it.skipIf(!built)('serves the built page, client routes as index.html, and hashed assets as immutable', async () => {
    const page = await fetch(s.url + '/console/')
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    expect(page.headers.get('cache-control')).toBe('no-cache')
    const html = await page.text()
    expect(html).toContain('<div id="app"></div>')
    // No CDN: every script and stylesheet comes from this server.
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])
    expect(assets.length).toBeGreaterThan(0)
    for (const a of assets) expect(a).toMatch(/^\/console\//)
    const asset = await fetch(s.url + assets.find((a) => a.startsWith('/console/assets/'))!)
    expect(asset.status).toBe(200)
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')

    // The icon, also where browsers look without being told (no 404 in the console's network log).
    const ico = await fetch(s.url + '/favicon.ico', { redirect: 'manual' })
    expect(ico.status).toBe(301)
    expect(ico.headers.get('location')).toBe('/console/favicon.svg')
    const icon = await fetch(s.url + '/console/favicon.svg')
    expect(icon.status).toBe(200)
    expect(icon.headers.get('content-type')).toMatch(/^image\/svg\+xml/)

    const deep = await fetch(s.url + '/console/endpoints/abc/workers')
    expect(deep.status).toBe(200)
    expect(await deep.text()).toBe(html)
  })

  it('prints the console URL when `hangar serve` starts', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-console-'))
    const proc = spawn(
      process.execPath,
      [join(ROOT, 'bin', 'hangar.js'), 'serve', '--port', '0', '--data-dir', dataDir],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    try {
      const out = await new Promise<string>((resolve, reject) => {
        let text = ''
        proc.stdout!.on('data', (c) => {
          text += c
          if (/admin key/.test(text)) resolve(text)
        })
        proc.stderr!.on('data', (c) => (text += c))
        proc.once('exit', (code) => reject(new Error(`hangar exited (${code}):\n${text}`)))
      })
      const url = /listening on (\S+)/.exec(out)![1]
      expect(out).toContain(`console:     ${url}/console/`)
    } finally {
      proc.kill('SIGTERM')
      await new Promise((r) => proc.once('exit', r))
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
