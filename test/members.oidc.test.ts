import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { addMember, type TestMember } from './helpers/members.js'
import { finishOidcFlow, linkWithProvider, startOidcFlow, TestOidcProvider } from './helpers/oidcProvider.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** Where a sign-in ended: the session token, or the reason it was refused (from the console's fragment). */
interface Ending {
  token?: string
  error?: string
}

describe('members: sign-in with an OpenID Connect provider (a real provider on a loopback port)', () => {
  let s: TestServer
  let idp: TestOidcProvider
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
    accountKey = await s.accountKey('oidc-team')
    dev = await addMember(s, accountKey, 'developer', 'oidc-dev')
    // Signing in with the provider finds a member by the identity linked to them, never by email: link it first.
    idp.user = { sub: 'sub-dev', email: dev.email, email_verified: true }
    expect(await linkWithProvider(s.url, dev.token)).toBe('/console/members#oidc-linked=1')
  })
  afterAll(async () => {
    await s?.stop()
    await idp?.stop()
  })
  beforeEach(() => {
    idp.tamper = {}
    idp.user = { sub: 'sub-dev', email: dev.email, email_verified: true }
  })

  const start = (body: Record<string, string> = {}) => startOidcFlow(s.url, { body })
  /** The browser arriving back at Hangar's callback, with `cookie` (or none). */
  const callback = async (url: string, cookie: string | null): Promise<Ending> => {
    const { location, token, error } = await finishOidcFlow(url, cookie)
    // A sign-in ends on the console's first page; a link of the provider on the members page, where it started.
    expect(location).toMatch(/^\/console\/(members)?#/)
    return { token, error }
  }
  const signIn = async (body: Record<string, string> = {}) => {
    const { cookie, callback: url } = await start(body)
    return callback(url, cookie)
  }
  const memberCount = async () => (await s.api('GET', '/v2/members', undefined, accountKey)).body.members.length

  it('tells the console which provider to offer', async () => {
    expect((await s.api('GET', '/v2/sessions/oidc', undefined, null)).body).toEqual({ provider: { name: 'Test IdP' } })
  })

  it('signs a member in: the same session token a password gives, with their role, and an audit entry', async () => {
    const { authorizationUrl } = await start()
    const asked = new URL(authorizationUrl).searchParams
    expect(asked.get('code_challenge_method')).toBe('S256')
    expect(asked.get('nonce')).toBeTruthy()
    const { token, error } = await signIn()
    expect(error).toBeUndefined()
    expect(token).toMatch(/^hs_/)
    const me = await s.api('GET', '/v2/me', undefined, token)
    expect(me.body).toMatchObject({ kind: 'member', member: { id: dev.id, role: 'developer' } })
    expect((await s.api('GET', '/v2/pods', undefined, token)).status).toBe(200)
    expect((await s.api('GET', '/v2/audit', undefined, token)).status).toBe(403)
    expect((await s.api('DELETE', '/v2/sessions/current', undefined, token)).status).toBe(204)
    const entries = (await s.api('GET', '/v2/audit?action=member.sign-in.oidc', undefined, accountKey)).body.entries
    expect(entries[0]).toMatchObject({ outcome: 'success', actor: { type: 'member', id: dev.id } })
  })

  it('refuses an email that is no member, and makes no member; control: the same person with an invitation joins', async () => {
    idp.user = { sub: 'sub-stranger', email: `stranger-${Date.now()}@example.com`, email_verified: true }
    const before = await memberCount()
    const accounts = (await s.api('GET', '/v2/admin/accounts')).body
    const refused = await signIn()
    expect(refused.token).toBeUndefined()
    expect(refused.error).toContain('is no member')
    expect(await memberCount()).toBe(before)
    expect((await s.api('GET', '/v2/admin/accounts')).body).toEqual(accounts)

    const inv = await s.api('POST', '/v2/invitations', { role: 'read-only' }, accountKey)
    const joined = await signIn({ invitation: inv.body.token })
    expect(joined.error).toBeUndefined()
    const me = (await s.api('GET', '/v2/me', undefined, joined.token)).body
    expect(me.member).toMatchObject({ email: idp.user.email, role: 'read-only' })
    expect(await memberCount()).toBe(before + 1)
    // The invitation is used: it lets no one else in.
    expect((await s.api('POST', '/v2/sessions/oidc', { invitation: inv.body.token }, null)).status).toBe(404)
  })

  it('signs no one in to a member by an email typed at an invitation (an account pre-hijack)', async () => {
    // The attacker's account key invites; the attacker accepts with the victim's email and a password of their own.
    const attackerKey = await s.accountKey('oidc-prehijack')
    const victimEmail = `victim-${Date.now()}@corp.example`
    const inv = await s.api('POST', '/v2/invitations', { role: 'owner' }, attackerKey)
    const planted = await s.api(
      'POST',
      '/v2/invitations/accept',
      { token: inv.body.token, email: victimEmail, password: 'the attacker knows this one' },
      null,
    )
    expect(planted.status).toBe(201)
    // Later the victim signs in with the provider, which verified that email as theirs: refused, and told how to
    // get in to a membership that really is theirs (its password, then linking), not let in to the attacker's.
    idp.user = { sub: 'sub-victim', email: victimEmail, email_verified: true }
    const ending = await signIn()
    expect(ending.token).toBeUndefined()
    expect(ending.error).toContain('no sign-in with Test IdP is linked to it: sign in with your password')
    // The attacker cannot link the victim's identity either: the provider vouches for the attacker's own email.
    idp.user = { sub: 'sub-attacker', email: `attacker-${Date.now()}@evil.example`, email_verified: true }
    expect(await linkWithProvider(s.url, planted.body.token)).toContain("not as this member's email")
    idp.user = { sub: 'sub-victim', email: victimEmail, email_verified: true }
    expect((await signIn()).error).toContain('no sign-in with Test IdP is linked')
    const members = (await s.api('GET', '/v2/members', undefined, attackerKey)).body.members
    expect(members.map((m: { id: string }) => m.id)).toEqual([planted.body.member.id])
  })

  it('a member who joined with the provider signs in by its identity, whatever email it says later', async () => {
    const email = `joiner-${Date.now()}@example.com`
    const sub = `sub-joiner-${Date.now()}`
    idp.user = { sub, email, email_verified: true }
    const inv = await s.api('POST', '/v2/invitations', { role: 'read-only' }, accountKey)
    const joined = await signIn({ invitation: inv.body.token })
    expect(joined.error).toBeUndefined()
    const memberOf = async (token?: string) => (await s.api('GET', '/v2/me', undefined, token)).body.member
    const id = (await memberOf(joined.token)).id
    expect((await memberOf((await signIn()).token)).id).toBe(id)
    idp.user = { sub, email: `renamed-${Date.now()}@example.com`, email_verified: true }
    expect((await memberOf((await signIn()).token)).id).toBe(id)
    // Someone else at the provider showing the member's email is not them.
    idp.user = { sub: `${sub}-other`, email, email_verified: true }
    const other = await signIn()
    expect(other.token).toBeUndefined()
    expect(other.error).toContain('linked to another Test IdP identity')
    // The identity joins no second time, with whatever email.
    const before = await memberCount()
    idp.user = { sub, email: `again-${Date.now()}@example.com`, email_verified: true }
    const inv2 = await s.api('POST', '/v2/invitations', { role: 'read-only' }, accountKey)
    expect((await signIn({ invitation: inv2.body.token })).error).toContain("identity is already a member's")
    expect(await memberCount()).toBe(before)
  })

  it('links the provider to a member signed in with a password, who then signs in with it', async () => {
    const pw = await addMember(s, accountKey, 'developer', 'oidc-link')
    idp.user = { sub: `sub-link-${Date.now()}`, email: pw.email.toUpperCase(), email_verified: true }
    const before = await signIn()
    expect(before.token).toBeUndefined()
    expect(before.error).toContain('sign in with your password, then link Test IdP')
    expect(await linkWithProvider(s.url, pw.token)).toBe('/console/members#oidc-linked=1')
    const after = await signIn()
    expect((await s.api('GET', '/v2/me', undefined, after.token)).body.member.id).toBe(pw.id)
    // Linking the same identity again changes nothing; another identity is refused.
    expect(await linkWithProvider(s.url, pw.token)).toBe('/console/members#oidc-linked=1')
    idp.user = { ...idp.user, sub: `${idp.user.sub}-2` }
    expect(await linkWithProvider(s.url, pw.token)).toContain('linked already to this member, as another identity')
  })

  it("refuses to link an identity whose email is not the member's, or that another member holds; control: their own links", async () => {
    const a = await addMember(s, accountKey, 'developer', 'oidc-link-a')
    const b = await addMember(s, accountKey, 'developer', 'oidc-link-b')
    idp.user = { sub: 'sub-link-b', email: a.email, email_verified: true }
    expect(await linkWithProvider(s.url, b.token)).toContain(`not as this member's email (${b.email})`)
    // dev's identity, the provider now saying b's email: still dev's.
    idp.user = { sub: 'sub-dev', email: b.email, email_verified: true }
    expect(await linkWithProvider(s.url, b.token)).toContain('linked to another member')
    idp.user = { sub: 'sub-dev', email: dev.email, email_verified: true }
    expect((await s.api('GET', '/v2/me', undefined, (await signIn()).token)).body.member.id).toBe(dev.id)
    // An unverified email links nothing.
    idp.user = { sub: 'sub-link-b', email: b.email, email_verified: false }
    expect(await linkWithProvider(s.url, b.token)).toContain('not verified')
    idp.user = { sub: 'sub-link-b', email: b.email, email_verified: true }
    expect(await linkWithProvider(s.url, b.token)).toBe('/console/members#oidc-linked=1')
  })

  it('starts linking for a member signed in only, and links nothing once that session has ended', async () => {
    const c = await addMember(s, accountKey, 'developer', 'oidc-link-c')
    const link = (key: string | null) => s.api('POST', '/v2/sessions/oidc/link', undefined, key)
    expect((await link(null)).status).toBe(401)
    expect((await link(accountKey)).status).toBe(403)
    const key = await s.api('POST', '/v2/me/keys', { name: 'ci' }, c.token)
    expect(key.status).toBe(201)
    const byKey = await link(key.body.key)
    expect(byKey.status).toBe(403)
    expect(byKey.body.detail).toContain('a member signed in (a session)')
    // Started by a session that is signed out before the provider answers: refused.
    const started = await fetch(`${s.url}/v2/sessions/oidc/link`, {
      method: 'POST',
      headers: { authorization: `Bearer ${c.token}` },
    })
    expect(started.status).toBe(201)
    const cookie = started.headers.get('set-cookie')!.split(';')[0]
    idp.user = { sub: 'sub-link-c', email: c.email, email_verified: true }
    const atProvider = await fetch(((await started.json()) as { authorizationUrl: string }).authorizationUrl, {
      redirect: 'manual',
    })
    expect((await s.api('DELETE', '/v2/sessions/current', undefined, c.token)).status).toBe(204)
    expect((await callback(atProvider.headers.get('location')!, cookie)).error).toContain('has ended')
    expect((await signIn()).error).toContain('no sign-in with Test IdP is linked')
  })

  it('refuses an unverified email, recorded as a refused sign-in of that member; control: verified, it passes', async () => {
    idp.user = { ...idp.user, email_verified: false }
    const refused = await signIn()
    expect(refused.token).toBeUndefined()
    expect(refused.error).toContain('not verified')
    const entries = (await s.api('GET', '/v2/audit?action=member.sign-in.oidc', undefined, accountKey)).body.entries
    expect(entries[0]).toMatchObject({ outcome: 'refused', status: 403, actor: { type: 'member', id: dev.id } })
    idp.user = { ...idp.user, email_verified: true }
    expect((await signIn()).token).toMatch(/^hs_/)
  })

  // Each ID token attack is refused, and the same flow without the tampering passes (the check is what refused it).
  const attacks: Array<[string, TestOidcProvider['tamper'], RegExp]> = [
    ['an ID token for another client (wrong aud)', { aud: 'someone-else' }, /"aud" \(audience\) claim/],
    ['an expired ID token', { expInS: -600 }, /"exp" \(expiration time\)/],
    ['an ID token signed by a key not in the JWKS', { foreignKey: true }, /no applicable keys/],
    [
      'an ID token with a forged signature under the JWKS key id',
      { forgedSignature: true },
      /signature verification failed/,
    ],
    ['an ID token from another issuer', { iss: 'https://evil.example.com' }, /"iss" \(issuer\) claim/],
    ['an ID token whose nonce is not the one asked for', { nonce: 'not-the-nonce' }, /"nonce" claim/],
  ]
  for (const [what, tamper, reason] of attacks) {
    it(`refuses ${what}; control: untampered, it passes`, async () => {
      idp.tamper = tamper
      const refused = await signIn()
      expect(refused.token).toBeUndefined()
      expect(refused.error).toMatch(reason)
      idp.tamper = {}
      expect((await signIn()).token).toMatch(/^hs_/)
    })
  }

  it("refuses a callback whose state is not the browser's; control: the browser's own passes", async () => {
    const mine = await start()
    const other = await start()
    const requests = idp.tokenRequests
    // Another browser's code and state with this browser's cookie (a login CSRF): refused before any token request.
    expect((await callback(other.callback, mine.cookie)).error).toContain('state')
    const forged = new URL(mine.callback)
    forged.searchParams.set('state', 'guessed')
    expect((await callback(forged.href, mine.cookie)).error).toContain('state')
    expect(idp.tokenRequests).toBe(requests)
    expect((await callback(mine.callback, mine.cookie)).token).toMatch(/^hs_/)
  })

  it('refuses a callback without the cookie of the browser that started it; control: with it, it passes', async () => {
    const { cookie, callback: url } = await start()
    expect((await callback(url, null)).error).toContain('no sign-in cookie')
    // One character of the sealed flow changed (in its middle: a base64 padding character may decode the same).
    const at = cookie.length - 12
    const tampered = cookie.slice(0, at) + (cookie[at] === 'A' ? 'B' : 'A') + cookie.slice(at + 1)
    expect((await callback(url, tampered)).error).toContain('not one this server made')
    expect((await callback(url, cookie)).token).toMatch(/^hs_/)
  })

  it('refuses a callback replayed, even where the provider would hand out tokens for the code again', async () => {
    idp.tamper = { reuseCodes: true }
    const { cookie, callback: url } = await start()
    expect((await callback(url, cookie)).token).toMatch(/^hs_/)
    const replay = await callback(url, cookie)
    expect(replay.token).toBeUndefined()
    expect(replay.error).toContain('finished already')
  })

  it('refuses to start with an invitation that cannot be accepted', async () => {
    const res = await s.api('POST', '/v2/sessions/oidc', { invitation: 'no-such-invitation' }, null)
    expect(res.status).toBe(404)
  })
})

describe('members: OIDC sign-in not configured', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer()
  })
  afterAll(async () => {
    await s?.stop()
  })

  it('offers no provider and refuses to start one', async () => {
    expect((await s.api('GET', '/v2/sessions/oidc', undefined, null)).body).toEqual({ provider: null })
    const started = await s.api('POST', '/v2/sessions/oidc', {}, null)
    expect(started.status).toBe(404)
    expect(started.body.detail).toContain('not configured')
  })
})
