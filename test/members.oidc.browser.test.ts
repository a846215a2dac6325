import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findChromium } from './helpers/chromium.js'
import { addMember, type TestMember } from './helpers/members.js'
import { linkWithProvider, TestOidcProvider } from './helpers/oidcProvider.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const browserAt = findChromium()
const skip =
  browserAt.path === null
    ? browserAt.reason
    : !existsSync(join(root, 'dist/console/index.html'))
      ? 'the console is not built: run `npm run build` (npm test does)'
      : null
if (skip) console.log(`[OIDC browser tests skipped] ${skip}`)

describe.skipIf(skip !== null)('OIDC sign-in in the web console, in a real browser', () => {
  let s: TestServer
  let idp: TestOidcProvider
  let browser: Browser
  let accountKey: string
  let dev: TestMember

  beforeAll(async () => {
    idp = await new TestOidcProvider().start()
    s = await startTestServer({
      members: {
        oidc: { name: 'Test IdP', issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
      },
    })
    idp.redirectUri = `${s.url}/v2/sessions/oidc/callback`
    accountKey = await s.accountKey('oidc-web')
    dev = await addMember(s, accountKey, 'developer', 'oidc-web')
    // Signing in with the provider finds a member by the identity linked to them, never by email: link it first.
    idp.user = { sub: 'web-dev', email: dev.email, email_verified: true }
    expect(await linkWithProvider(s.url, dev.token)).toBe('/console/members#oidc-linked=1')
    browser = await chromium.launch({
      executablePath: browserAt.path!,
      args: ['--no-sandbox', '--disable-dev-shm-usage'],
    })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await s?.stop()
    await idp?.stop()
  })

  const freshPage = async () => {
    const page = await (await browser.newContext()).newPage()
    page.setDefaultTimeout(20_000)
    return page
  }

  it('a member clicks "Sign in with Test IdP" and lands signed in; the token is in no address', async () => {
    idp.user = { sub: 'web-dev', email: dev.email, email_verified: true }
    const page = await freshPage()
    await page.goto(`${s.url}/console/`)
    await page.click('button:has-text("Sign in with Test IdP")')
    await page.waitForSelector('h1:has-text("Endpoints")')
    expect(await page.evaluate(() => sessionStorage.getItem('hangar.apiKey'))).toMatch(/^hs_/)
    expect(page.url()).not.toContain('#')
    expect(await page.isVisible('nav a:has-text("Audit log")')).toBe(false)
  })

  it('someone who is no member is sent back to the sign-in page, told why', async () => {
    idp.user = { sub: 'web-stranger', email: `web-stranger-${Date.now()}@example.com`, email_verified: true }
    const page = await freshPage()
    await page.goto(`${s.url}/console/`)
    await page.click('button:has-text("Sign in with Test IdP")')
    await expect.poll(() => page.textContent('.problem')).toContain('is no member')
    expect(await page.evaluate(() => sessionStorage.getItem('hangar.apiKey'))).toBeNull()
  })

  it('an invitee joins with the provider from the invitation page', async () => {
    const inv = await s.api('POST', '/v2/invitations', { role: 'read-only' }, accountKey)
    idp.user = { sub: 'web-joiner', email: `web-joiner-${Date.now()}@example.com`, email_verified: true }
    const page = await freshPage()
    await page.goto(inv.body.url)
    await page.waitForSelector('text=You are invited to')
    await page.click('button:has-text("Join with Test IdP")')
    await page.waitForSelector('h1:has-text("Endpoints")')
    const token = await page.evaluate(() => sessionStorage.getItem('hangar.apiKey'))
    const me = await s.api('GET', '/v2/me', undefined, token)
    expect(me.body.member).toMatchObject({ email: idp.user.email, role: 'read-only' })
  })

  it('a member signed in with a password links the provider from the members page, then signs in with it', async () => {
    const pw = await addMember(s, accountKey, 'developer', 'oidc-web-link')
    idp.user = { sub: 'web-link', email: pw.email, email_verified: true }
    const page = await freshPage()
    await page.goto(`${s.url}/console/`)
    await page.fill('input[name=email]', pw.email)
    await page.fill('input[name=password]', pw.password)
    await page.click('button:has-text("Sign in as a member")')
    await page.waitForSelector('h1:has-text("Endpoints")')
    await page.click('nav a:has-text("Members")')
    // Another person's identity at the provider (another email): refused, said on the page, still signed in.
    idp.user = { sub: 'web-link-other', email: `web-other-${Date.now()}@example.com`, email_verified: true }
    await page.click('button:has-text("Link Test IdP")')
    await page.waitForSelector('.problem:has-text("not as this member\'s email")')
    expect(page.url()).not.toContain('#')
    idp.user = { sub: 'web-link', email: pw.email, email_verified: true }
    await page.click('button:has-text("Link Test IdP")')
    await page.waitForSelector('text=Linked: you can sign in with Test IdP')
    const other = await freshPage()
    await other.goto(`${s.url}/console/`)
    await other.click('button:has-text("Sign in with Test IdP")')
    await other.waitForSelector('h1:has-text("Endpoints")')
    const token = await other.evaluate(() => sessionStorage.getItem('hangar.apiKey'))
    expect((await s.api('GET', '/v2/me', undefined, token)).body.member.id).toBe(pw.id)
  })
})
