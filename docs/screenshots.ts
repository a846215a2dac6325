/**
 * Takes the console screenshots in docs/ (docs/console.md shows them): an endpoint's Metrics tab after a workload
 * and the Pods page with a running pod. Run after `npm run build`, with Chromium installed
 * (`.ci/setup-chromium.sh`):
 *
 *   npx tsx docs/screenshots.ts
 *
 * The workload runs on a clock moved forward a minute per batch, so an hour's chart fills in seconds.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { parseConfig } from '../src/config.js'
import { startHangar } from '../src/main.js'
import { findChromium } from '../test/helpers/chromium.js'

const out = fileURLToPath(new URL('.', import.meta.url))
const browserAt = findChromium()
if (!browserAt.path) throw new Error(browserAt.reason)

let offset = -45 * 60_000
const clock = { now: () => Date.now() + offset }
const dataDir = mkdtempSync(join(tmpdir(), 'hangar-shots-'))
const key = 'hk_screenshots-0123456789abcdef'
const hangar = await startHangar(parseConfig({ host: '127.0.0.1', port: 0, logLevel: 'silent', dataDir, adminApiKey: key, fleet: { detectGpus: false }, metricsFlushMs: 1_000 }), { clock, logger: false })
const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(hangar.url + path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  return res.json()
}
try {
  const ep = await api('POST', '/v2/serverless', {
    name: 'image-resize',
    type: 'QUEUE',
    image: 'hangar/sleep:latest',
    cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
    scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
    workers: { min: 0, max: 3, idleTimeout: 600 },
  })
  // A day-shaped load over 45 "minutes": a few jobs a minute, more in the middle, some slow, one failing batch.
  for (let minute = 0; minute < 45; minute++) {
    const n = 2 + Math.round(4 * Math.sin((minute / 45) * Math.PI))
    await Promise.all(Array.from({ length: n }, (_, i) => api('POST', `/v2/${ep.id}/runsync`, { input: { ms: 40 + ((minute * 7 + i * 31) % 9) * 25 } })))
    if (minute % 15 === 7) await api('POST', `/v2/${ep.id}/runsync`, { input: { ms: 10, exit: 1 } })
    await hangar.endpointMetrics.flush()
    offset += 60_000
  }
  offset = 0
  await hangar.endpointMetrics.flush()
  // The endpoint's workers give their CPUs back for the pods.
  await api('PATCH', `/v2/serverless/${ep.id}`, { workers: { min: 0, max: 0 } })
  for (const body of [
    { name: 'notebook', image: 'hangar/pod:latest', cpu: { id: 'cpu3c', vcpuCount: 2 }, ports: ['8888/http', '22/tcp'] },
    { name: 'trainer', image: 'hangar/pod:latest', cpu: { id: 'cpu3c', vcpuCount: 2 }, ports: ['8080/http'], env: { EXIT_AFTER_MS: '300', EXIT_CODE: '2' } },
  ]) {
    const pod = await api('POST', '/v2/pods', body)
    if (!pod.id) throw new Error(`pod ${body.name}: ${JSON.stringify(pod)}`)
  }

  const browser = await chromium.launch({ executablePath: browserAt.path, args: ['--no-sandbox', '--disable-dev-shm-usage'] })
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } })
    await page.goto(`${hangar.url}/console/`)
    await page.fill('input[name=apiKey]', key)
    await page.click('button[type=submit]')
    await page.waitForSelector('h1:has-text("Endpoints")')
    await page.goto(`${hangar.url}/console/endpoints/${ep.id}/metrics`)
    await page.locator('.time-chart[data-chart^="Requests"] canvas').first().waitFor()
    await page.locator('.time-chart[data-chart="Execution time"] canvas').first().waitFor()
    await page.screenshot({ path: join(out, 'console-endpoint-metrics.png') })
    await page.goto(`${hangar.url}/console/pods`)
    await page.locator('tbody tr:has-text("notebook") a.port-link').waitFor()
    await page.locator('tbody tr:has-text("trainer") .pod-error').waitFor()
    // A few CPU/memory samples for the small charts.
    for (let i = 0; i < 4; i++) await page.waitForResponse((r) => r.url().endsWith('/v2/pods'))
    await page.screenshot({ path: join(out, 'console-pods.png'), clip: { x: 0, y: 0, width: 1200, height: 520 } })
  } finally {
    await browser.close()
  }
} finally {
  await hangar.stop()
  rmSync(dataDir, { recursive: true, force: true })
}
console.log('wrote docs/console-endpoint-metrics.png and docs/console-pods.png')
