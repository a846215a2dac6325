import { existsSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { findChromium } from './helpers/chromium.js'
import { waitPortAnswers } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const built = existsSync(join(root, 'dist/console/index.html'))
const browserAt = findChromium()
const skip =
  browserAt.path === null
    ? browserAt.reason
    : !built
      ? 'the console is not built: run `npm run build` (npm test does)'
      : null
if (skip) console.log(`[console browser tests skipped] ${skip}`)

/** Screenshots of each flow, for people to look at (test-results/ is not committed). */
const shots = join(root, 'test-results/console')

describe.skipIf(skip !== null)('web console in a real browser', () => {
  let s: TestServer
  let browser: Browser
  let page: Page
  let endpointId = ''
  const shot = (name: string) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true })
    s = await startTestServer({ jobs: { pingIntervalMs: 500 } })
    // Running as root (CI containers) needs --no-sandbox.
    browser = await chromium.launch({
      executablePath: browserAt.path!,
      args: ['--no-sandbox', '--disable-dev-shm-usage'],
    })
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.setDefaultTimeout(20_000)
  }, 60_000)
  afterEach(async (ctx) => {
    // What the browser showed when a flow failed, to see why.
    if (ctx.task.result?.state === 'fail') await shot(`failed-${ctx.task.name.replace(/\W+/g, '-').slice(0, 60)}`)
  })
  afterAll(async () => {
    await browser?.close()
    await s?.stop()
  })

  it('redirects / to the console and signs in with an API key (a wrong key is refused)', async () => {
    await page.goto(s.url + '/')
    expect(new URL(page.url()).pathname).toBe('/console/')
    await page.fill('input[name=apiKey]', 'hk_not-a-real-key-0000000000')
    await page.click('button[type=submit]')
    await expect.poll(() => page.textContent('.problem')).toContain('unknown API key')
    await page.fill('input[name=apiKey]', s.adminKey)
    await page.click('button[type=submit]')
    await page.waitForSelector('h1:has-text("Endpoints")')
    expect(await page.isVisible('nav a:has-text("API keys")')).toBe(true)
    // The key lives in this tab's session storage, not in a cookie.
    expect(await page.evaluate(() => sessionStorage.getItem('hangar.apiKey'))).toBe(s.adminKey)
    expect(await page.context().cookies()).toEqual([])
    await shot('1-signed-in')
  })

  it("creates an endpoint from a template, showing the server's validation error beside its field first", async () => {
    await page.click('a:has-text("New endpoint")')
    await page.waitForSelector('select[name=templateId] option:has-text("hangar/echo:latest")', { state: 'attached' })
    // No name: the server answers 422 and the form puts "name: ..." under the Name field.
    await page.click('button:has-text("Create endpoint")')
    const nameError = page.locator('[data-field=name] .field-error')
    await nameError.waitFor()
    expect(await nameError.textContent()).toMatch(/^name: must NOT have fewer than 1 characters/)
    await shot('2-validation-error')

    await page.fill('input[name=name]', 'browser-echo')
    await page.fill('input[name=scalingValue]', '1')
    await page.click('button:has-text("Create endpoint")')
    // The webhook signing secret is shown once, before going on to the endpoint.
    await page.waitForSelector('h1:has-text("Endpoint created")')
    expect(await page.textContent('.mono.secret')).toMatch(/^whsec_/)
    expect(await page.locator('button.copy').count()).toBe(1)
    await page.click('button:has-text("Continue")')
    await page.waitForURL(/\/console\/endpoints\/[^/]+\/jobs$/)
    endpointId = /\/endpoints\/([^/]+)\/jobs/.exec(page.url())![1]
    const created = await s.api('GET', `/v2/serverless/${endpointId}`)
    expect(created.body).toMatchObject({
      name: 'browser-echo',
      image: 'hangar/echo:latest',
      scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
    })
    await shot('3-endpoint-created')
  })

  it('runs a job and follows it to COMPLETED with its output', async () => {
    await page.fill('textarea[name=input]', '{"greeting": "hello from the browser"}')
    await page.click('button:has-text("Run")')
    await page.waitForSelector('.job .badge:has-text("COMPLETED")', { timeout: 30_000 })
    expect(await page.textContent('.job .output')).toContain('hello from the browser')
    await shot('4-job-completed')
    // The job is in the endpoint's recent requests.
    await page.click('.tabs a:has-text("Requests")')
    await page.click('td:has(.badge:has-text("COMPLETED")) >> xpath=.. >> button.link')
    await page.waitForSelector('.request-output')
    expect(await page.textContent('.request-output')).toContain('hello from the browser')
  })

  it("opens a worker's live logs", async () => {
    await page.click('.tabs a:has-text("Workers")')
    await page.click('tbody button:has-text("Logs")')
    await page.waitForSelector('.log div')
    expect(await page.textContent('.logs h2')).toMatch(/live|ended/)
    // The history comes first: the process driver's line telling how the worker was started.
    expect(await page.textContent('.log')).toContain('starting:')
    await shot('5-worker-logs')
  })

  it('charts the jobs that ran on the Metrics tab, per window', async () => {
    await page.click('.tabs a:has-text("Metrics")')
    const requests = page.locator('.time-chart[data-chart^="Requests"]')
    await requests.locator('canvas').first().waitFor()
    expect(await page.textContent('.stats')).toMatch(/Completed\s*1/)
    // Execution and cold-start charts have data; throttling never happened, so that chart says so in words.
    await page.locator('.time-chart[data-chart="Execution time"] canvas').first().waitFor()
    await page.locator('.time-chart[data-chart="Cold starts"] canvas').first().waitFor()
    expect(await page.textContent('.time-chart[data-chart="Queue depth"]')).toMatch(/No job waited|waiting jobs/)
    await page.click('.segmented button:has-text("Last day")')
    await page.waitForSelector('.segmented button.active:has-text("Last day")')
    await requests.locator('canvas').first().waitFor()
    await shot('5b-endpoint-metrics')
  })

  it('renders the overview: health as numbers and request URLs with copy buttons, not JSON', async () => {
    await page.click('.tabs a:has-text("Overview")')
    await page.waitForSelector('dl.stats[aria-label=Health]')
    expect(await page.textContent('dl.stats[aria-label=Health]')).toMatch(/Completed\s*1/)
    expect(await page.locator('.urls dt:text-is("runSync")').count()).toBe(1)
    expect(await page.locator('.urls button.copy').count()).toBeGreaterThan(5)
    expect(await page.locator('pre.json').count()).toBe(0)
  })

  it('shows a not-found view for an unknown tab and an unknown page', async () => {
    await page.goto(`${s.url}/console/endpoints/${endpointId}/no-such-tab`)
    await page.waitForSelector('.not-found h1:has-text("Not found")')
    expect(await page.textContent('.not-found')).toContain('no “no-such-tab” tab')
    await page.goto(`${s.url}/console/no-such-page`)
    await page.waitForSelector('.not-found h1:has-text("Not found")')
    await page.click('.not-found a')
    await page.waitForSelector('h1:has-text("Endpoints")')
    // The browser's own favicon request finds one.
    expect((await fetch(`${s.url}/favicon.ico`)).status).toBe(200)
  })

  it('creates a load-balancer endpoint and shows its page: base URL, curl, workers with health, request metrics', async () => {
    await page.goto(`${s.url}/console/endpoints/new`)
    await page.check('input[name=type] >> nth=1')
    await page.fill('input[name=name]', 'browser-lb')
    expect(await page.inputValue('input[name=image]')).toBe('hangar/http:latest')
    await page.fill('input[name=healthPath]', '/ping')
    await page.fill('input[name=scalingValue]', '2')
    expect(await page.isVisible('select[name=scalingType]')).toBe(false)
    await page.click('button:has-text("Create endpoint")')
    // Its signing secret is shown once too; Continue opens the load balancer's overview, not a job tester.
    await page.waitForSelector('h1:has-text("Endpoint created")')
    await page.click('button:has-text("Continue")')
    await page.waitForURL(/\/console\/endpoints\/[^/]+\/overview$/)
    const lbId = /\/endpoints\/([^/]+)\/overview/.exec(page.url())![1]
    const created = (await s.api('GET', `/v2/serverless/${lbId}`)).body
    expect(created).toMatchObject({
      type: 'LOAD_BALANCER',
      image: 'hangar/http:latest',
      scaling: { type: 'REQUEST_COUNT', requestCount: 2 },
      env: { HEALTH_CHECK_PATH: '/ping' },
    })
    // What applies to a load balancer, and nothing of a queue.
    expect(await page.textContent('.urls')).toContain(created.requestUrls.base)
    expect(await page.textContent('pre.curl')).toContain(
      `curl -H "Authorization: Bearer $HANGAR_API_KEY" ${created.requestUrls.base}/`,
    )
    expect(await page.locator('.tabs a').allTextContents()).toEqual([
      'Overview',
      'Metrics',
      'Workers',
      'Releases',
      'Edit',
    ])
    expect(await page.locator('.problem').count()).toBe(0)
    // A request through the proxy starts a worker; the workers tab shows its health, the metrics its request.
    const res = await fetch(`${created.requestUrls.base}/whoami`, {
      headers: { authorization: `Bearer ${s.adminKey}` },
    })
    expect(res.status).toBe(200)
    await page.click('.tabs a:has-text("Workers")')
    await page.waitForSelector('tbody .badge:has-text("READY")')
    expect(await page.locator('.waiting, .problem').count()).toBe(0)
    await page.click('.tabs a:has-text("Metrics")')
    await page.locator('.time-chart[data-chart^="Requests"] canvas').first().waitFor()
    expect(await page.textContent('.stats')).toMatch(/Requests\s*1/)
    await shot('5c-lb-endpoint')
    await s.api('DELETE', `/v2/serverless/${lbId}`)
    await page.goto(`${s.url}/console/endpoints/${endpointId}/overview`)
    await page.waitForSelector('dl.stats[aria-label=Health]')
  })

  it('edits the endpoint, which makes a release listed with its diff', async () => {
    await page.click('.tabs a:has-text("Edit")')
    await page.fill('textarea[name=env]', 'GREETING=hi')
    await page.click('button:has-text("Save changes")')
    await page.waitForURL(/\/overview$/)
    await page.click('.tabs a:has-text("Releases")')
    await page.waitForSelector('td:has-text("env.GREETING")')
    expect(await page.textContent('tbody tr:first-child')).toContain('env.GREETING: null → "hi"')
    expect((await s.api('GET', `/v2/serverless/${endpointId}`)).body.env).toEqual({ GREETING: 'hi' })
  })

  it('creates an API key for an account and shows it once', async () => {
    await s.api('POST', '/v2/admin/accounts', { name: 'acme' })
    await page.click('nav a:has-text("API keys")')
    await page.waitForSelector('select[name=account] option:text-is("acme")', { state: 'attached' })
    await page.selectOption('select[name=account]', 'acme')
    await page.click('button:has-text("Create key")')
    const key = (await page.locator('.notice .secret').textContent())!
    // The key shown works, and is an ALL key of acme.
    const r = await s.api('GET', '/v2/serverless', undefined, key)
    expect(r.status).toBe(200)
    // The list is read again after the create: it shows the new key once that answer is in.
    await expect.poll(() => page.textContent('tbody')).toContain('acme')
  })

  it('creates a pod (after a validation error), shows its cost and logs, and stops it', async () => {
    await page.click('nav a:has-text("Pods")')
    await page.waitForSelector('h1:has-text("Pods")')
    await page.fill('input[name=image]', 'hangar/pod:latest')
    await page.click('button:has-text("Create pod")')
    await page.locator('[data-field=name] .field-error').waitFor()
    await page.fill('input[name=name]', 'browser-pod')
    await page.fill('input[name=ports]', '8080/http, 22/tcp')
    await page.click('button:has-text("Create pod")')
    const row = page.locator('tbody tr:has-text("browser-pod")')
    await row.locator('.badge:has-text("RUNNING")').waitFor({ timeout: 30_000 })
    const pod = ((await s.api('GET', '/v2/pods')).body.pods as Array<{ id: string; name: string; cost: number }>).find(
      (p) => p.name === 'browser-pod',
    )!
    expect(pod.cost).toBeGreaterThan(0)
    expect(await row.textContent()).toContain(`$${pod.cost.toFixed(3)}/h`)
    // RUNNING comes as the program starts: the link is followed once its port answers.
    await waitPortAnswers((await s.api('GET', `/v2/pods/${pod.id}`)).body, 8080)
    // The HTTP port opens in a new tab through the proxy, with no key typed: the pod's program answers.
    const [tab] = await Promise.all([
      page.waitForEvent('popup'),
      row.locator('a.port-link:has-text("HTTP 8080")').click(),
    ])
    await tab.waitForLoadState()
    expect(new URL(tab.url()).pathname).toBe(`/proxy/${pod.id}/8080/`)
    expect(new URL(tab.url()).search).toBe('')
    expect(JSON.parse((await tab.textContent('body'))!)).toMatchObject({ podId: pod.id, port: 8080 })
    await tab.close()
    // 22/tcp is mapped, but the sample program is no SSH server: no SSH command is offered.
    expect(await row.locator('.connect').textContent()).toContain('no SSH server answers')
    expect(await row.locator('.ssh').count()).toBe(0)
    // CPU and memory as small live charts.
    await row.locator('.spark svg polyline').first().waitFor({ state: 'attached' })
    await row.locator('button:has-text("Logs")').click()
    await page.waitForSelector('.log div:has-text("listening for port 8080")')
    await shot('7-pod-logs')
    await row.locator('button:has-text("Stop")').click()
    await row.locator('.badge:has-text("EXITED")').waitFor({ timeout: 30_000 })
  })

  it('charts billing per bucket as stacked bars', async () => {
    await page.click('nav a:has-text("Billing")')
    await page.waitForSelector('.chart svg')
    expect(await page.locator('.chart g.bar').count()).toBe(30)
    expect(await page.textContent('.legend')).toContain('Serverless')
    await page.selectOption('select[name=bucketSize]', 'hour')
    await expect.poll(() => page.locator('.chart g.bar').count()).toBe(48)
    expect(await page.textContent('.total')).toMatch(/^Total \$/)
    await shot('8-billing')
  })

  it("shows the installation's manual from the navigation: its pages, links between them, screenshots", async () => {
    await page.click('nav[aria-label=Main] a[href="/console/docs"]')
    await page.waitForSelector('article.doc h1:has-text("Hangar\'s manual")')
    const pages = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.md'),
    )
    expect(await page.locator('.docs-nav a').count()).toBe(pages.length)
    await page.click('.docs-nav a:has-text("Console")')
    await page.waitForSelector('article.doc h1:has-text("Console")')
    expect(new URL(page.url()).pathname).toBe('/console/docs/console')
    // Its screenshots come from the manual's folder too.
    await expect
      .poll(() =>
        page.evaluate(() =>
          [...document.querySelectorAll<HTMLImageElement>('article.doc img')].map((i) => i.naturalWidth > 0),
        ),
      )
      .toEqual([true, true])
    // A link to a heading of another page opens that page there, and a reload shows it again.
    await page.click('article.doc a[href="/console/docs/operations#endpoint-metrics"]')
    await page.waitForSelector('article.doc h1:has-text("Operations")')
    expect(page.url()).toMatch(/\/console\/docs\/operations#endpoint-metrics$/)
    await page.reload()
    await page.waitForSelector('article.doc h3#endpoint-metrics')
    // CI's tags of the shell blocks it runs are not shown; the blocks are.
    await page.goto(`${s.url}/console/docs/containers`)
    await page.waitForSelector('article.doc h1:has-text("Containers")')
    expect(await page.textContent('article.doc')).not.toContain('ci: containers')
    expect(await page.textContent('article.doc pre code')).toContain('apt-get update')
    await shot('9-docs')
  })

  it('fits a phone-width screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 })
    await page.click('button:has-text("Menu")')
    await page.click('nav a:has-text("Endpoints")')
    await page.waitForSelector('h1:has-text("Endpoints")')
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    await shot('6-phone-endpoints')
    // The charts follow the screen's width too.
    await page.goto(`${s.url}/console/endpoints/${endpointId}/metrics`)
    await page.locator('.time-chart[data-chart^="Requests"] canvas').first().waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true)
    await shot('6b-phone-metrics')
  })

  it('signs out, saying why, once the key is revoked', async () => {
    const key = await s.accountKey('revoked-later')
    const tab = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    tab.setDefaultTimeout(15_000)
    try {
      await tab.goto(s.url + '/console/')
      await tab.fill('input[name=apiKey]', key)
      await tab.click('button[type=submit]')
      await tab.waitForSelector('h1:has-text("Endpoints")')
      // Not an admin key: no API keys page.
      expect(await tab.isVisible('nav a:has-text("API keys")')).toBe(false)
      const keys = (await s.api('GET', '/v2/admin/keys')).body.keys as Array<{ id: string; accountName: string }>
      await s.api('POST', `/v2/admin/keys/${keys.find((k) => k.accountName === 'revoked-later')!.id}/revoke`)
      // The next call is refused (revocation clears the server's key cache): back to the sign-in form.
      await tab.click('nav a:has-text("Templates")')
      await tab.waitForSelector('input[name=apiKey]', { timeout: 15_000 })
      expect(await tab.textContent('.problem')).toContain('Signed out: API key was revoked')
      expect(await tab.evaluate(() => sessionStorage.getItem('hangar.apiKey'))).toBeNull()
    } finally {
      await tab.close()
    }
  })

  it('deletes the endpoint after confirmation', async () => {
    await page.setViewportSize({ width: 1280, height: 900 })
    await page.goto(`${s.url}/console/endpoints/${endpointId}/overview`)
    page.once('dialog', (d) => void d.accept())
    await page.click('button:has-text("Delete")')
    await page.waitForURL(/\/console\/endpoints$/)
    await page.waitForSelector('.empty')
    expect((await s.api('GET', `/v2/serverless/${endpointId}`)).status).toBe(404)
  })
})
