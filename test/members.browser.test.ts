import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findChromium } from './helpers/chromium.js'
import { addMember, type TestMember } from './helpers/members.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const browserAt = findChromium()
const skip =
  browserAt.path === null
    ? browserAt.reason
    : !existsSync(join(root, 'dist/console/index.html'))
      ? 'the console is not built: run `npm run build` (npm test does)'
      : null
if (skip) console.log(`[members browser tests skipped] ${skip}`)

describe.skipIf(skip !== null)('members in the web console, in a real browser', () => {
  let s: TestServer
  let browser: Browser
  let owner: TestMember

  beforeAll(async () => {
    s = await startTestServer()
    owner = await addMember(s, await s.accountKey('web-team'), 'owner')
    browser = await chromium.launch({
      executablePath: browserAt.path!,
      args: ['--no-sandbox', '--disable-dev-shm-usage'],
    })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await s?.stop()
  })

  it('an owner signs in with a password and invites; the invitee joins by the link, is given a role, and signs out', async () => {
    const page = await (await browser.newContext()).newPage()
    page.setDefaultTimeout(20_000)
    await page.goto(`${s.url}/console/`)
    await page.fill('input[name=email]', owner.email)
    await page.fill('input[name=password]', 'a wrong password')
    await page.click('button:has-text("Sign in as a member")')
    await expect.poll(() => page.textContent('.problem')).toContain('email or password is wrong')
    await page.fill('input[name=password]', owner.password)
    await page.click('button:has-text("Sign in as a member")')
    await page.waitForSelector('h1:has-text("Endpoints")')
    expect(await page.isVisible('nav a:has-text("API keys")')).toBe(false)
    expect(await page.evaluate(() => sessionStorage.getItem('hangar.apiKey'))).toMatch(/^hs_/)

    await page.click('nav a:has-text("Members")')
    await page.waitForSelector(`text=${owner.email}`)
    await page.selectOption('select[name=role]', 'developer')
    await page.click('button:has-text("Create invitation link")')
    const link = (await page.textContent('.notice .mono'))!.trim()
    expect(link).toMatch(new RegExp(`^${s.url}/console/invite#`))

    // The invitee, in a browser of their own.
    const invitee = await (await browser.newContext()).newPage()
    invitee.setDefaultTimeout(20_000)
    await invitee.goto(link)
    await invitee.waitForSelector('text=You are invited to')
    expect(await invitee.textContent('form')).toContain('web-team as developer')
    const email = `joiner-${Date.now()}@example.com`
    await invitee.fill('input[name=email]', email)
    await invitee.fill('input[name=name]', 'Joiner')
    await invitee.fill('input[name=password]', 'a password long enough')
    await invitee.click('button:has-text("Join")')
    await invitee.waitForSelector('h1:has-text("Endpoints")')
    const token = await invitee.evaluate(() => sessionStorage.getItem('hangar.apiKey'))
    expect(token).toMatch(/^hs_/)
    // A developer's navigation leaves out what the role cannot read; the owner's has it.
    expect(await invitee.isVisible('nav a:has-text("Members")')).toBe(true)
    expect(await invitee.isVisible('nav a:has-text("Audit log")')).toBe(false)
    expect(await invitee.isVisible('nav a:has-text("Billing")')).toBe(false)
    expect(await page.isVisible('nav a:has-text("Audit log")')).toBe(true)
    // The link is spent: opened again, it offers nothing.
    const again = await (await browser.newContext()).newPage()
    await again.goto(link)
    await expect.poll(() => again.textContent('body')).toContain('used, revoked or has expired')

    // The owner sees them and makes them read-only.
    await page.reload()
    await page.click('nav a:has-text("Members")')
    await page.selectOption(`select[aria-label="Role of ${email}"]`, 'read-only')
    await expect
      .poll(async () =>
        (await s.api('GET', '/v2/members', undefined, owner.token)).body.members.map((m: any) => m.role),
      )
      .toEqual(['owner', 'read-only'])

    await invitee.click('button:has-text("Sign out")')
    await invitee.waitForSelector('input[name=apiKey]')
    await expect.poll(async () => (await s.api('GET', '/v2/me', undefined, token)).status).toBe(401)
  })
})
