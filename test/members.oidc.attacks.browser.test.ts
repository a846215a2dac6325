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
if (skip) console.log(`[OIDC attack browser tests skipped] ${skip}`)

/**
 * Login CSRF through the console's fragment: the callback hands the session token to the console as
 * `/console/#oidc=<token>`, so a link of that shape, with the attacker's own token, must not sign a victim's tab
 * in as the attacker (whose account would then get whatever the victim types: secrets, registry passwords).
 */
describe.skipIf(skip !== null)('OIDC sign-in in the web console: a token the tab did not ask for', () => {
  let s: TestServer
  let idp: TestOidcProvider
  let browser: Browser
  let victim: TestMember
  let attacker: TestMember

  beforeAll(async () => {
    idp = await new TestOidcProvider().start()
    s = await startTestServer({
      members: {
        oidc: { name: 'Test IdP', issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
      },
    })
    idp.redirectUri = `${s.url}/v2/sessions/oidc/callback`
    victim = await addMember(s, await s.accountKey('oidc-csrf-victim'), 'developer', 'oidc-csrf-victim')
    attacker = await addMember(s, await s.accountKey('oidc-csrf-attacker'), 'owner', 'oidc-csrf-attacker')
    // Signing in with the provider finds a member by the identity linked to them, never by email: link it first.
    idp.user = { sub: 'csrf-victim', email: victim.email, email_verified: true }
    expect(await linkWithProvider(s.url, victim.token)).toBe('/console/members#oidc-linked=1')
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

  it("ignores a link's #oidc= token (and #oidc-error= text); control: the tab's own sign-in gets in", async () => {
    const page = await (await browser.newContext()).newPage()
    page.setDefaultTimeout(20_000)
    await page.goto(`${s.url}/console/#oidc=${encodeURIComponent(attacker.token)}`)
    // Signed in ("Endpoints") or not (the sign-in page): whichever the console settles on ("Signing in…" is neither).
    await page.waitForSelector('button:has-text("Sign in with Test IdP"), h1:has-text("Endpoints")')
    expect(await page.isVisible('h1:has-text("Endpoints")')).toBe(false)
    expect(await page.evaluate(() => sessionStorage.getItem('hangar.apiKey'))).toBeNull()
    expect(page.url()).not.toContain('#')
    await page.goto(`${s.url}/console/#oidc-error=${encodeURIComponent('Hangar moved: sign in at evil.example')}`)
    await page.waitForSelector('button:has-text("Sign in with Test IdP")')
    expect(await page.textContent('main')).not.toContain('evil.example')

    idp.user = { sub: 'csrf-victim', email: victim.email, email_verified: true }
    await page.click('button:has-text("Sign in with Test IdP")')
    await page.waitForSelector('h1:has-text("Endpoints")')
    const token = await page.evaluate(() => sessionStorage.getItem('hangar.apiKey'))
    expect((await s.api('GET', '/v2/me', undefined, token)).body.member.id).toBe(victim.id)
  })
})
