import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findChromium } from './helpers/chromium.js'
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
if (skip) console.log(`[console secrets and audit browser tests skipped] ${skip}`)

describe.skipIf(skip !== null)('console: secrets and the audit log in a real browser', () => {
  let s: TestServer
  let browser: Browser
  let page: Page
  let key: string

  beforeAll(async () => {
    s = await startTestServer()
    key = await s.accountKey('dana')
    browser = await chromium.launch({
      executablePath: browserAt.path!,
      args: ['--no-sandbox', '--disable-dev-shm-usage'],
    })
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.setDefaultTimeout(20_000)
    await page.goto(`${s.url}/console/`)
    await page.fill('input[name=apiKey]', key)
    await page.click('button[type=submit]')
    await page.waitForSelector('nav a:has-text("Secrets")')
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await s?.stop()
  })

  it('creates and rotates a secret, showing names and versions only', async () => {
    await page.click('nav a:has-text("Secrets")')
    await page.fill('input[name=name]', 'HF_TOKEN')
    await page.fill('input[name=value]', 'browser-secret-value')
    await page.click('button:has-text("Save secret")')
    await expect.poll(() => page.textContent('ul.items')).toContain('HF_TOKEN')
    page.once('dialog', (d) => void d.accept('browser-secret-value-2'))
    await page.click('button:has-text("Rotate")')
    await expect.poll(() => page.textContent('ul.items')).toContain('v2')
    expect(await page.content()).not.toContain('browser-secret-value')
  })

  it('shows the audit log of the account, filtered by action', async () => {
    await page.click('nav a:has-text("Audit log")')
    await expect.poll(() => page.locator('table.audit tbody tr').count()).toBe(2)
    expect(await page.textContent('table.audit tbody')).toContain('secret.update')
    await page.fill('input[name=action]', 'secret.create')
    await page.click('button:has-text("Filter")')
    await expect.poll(() => page.locator('table.audit tbody tr').count()).toBe(1)
    expect(await page.textContent('table.audit tbody')).toContain('secret.create')
  })
})
