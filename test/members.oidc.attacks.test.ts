import { randomUUID } from 'node:crypto'
import { request } from 'node:http'
import { Writable } from 'node:stream'
import pino from 'pino'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { systemClock } from '../src/domain/clock.js'
import { DomainError } from '../src/domain/errors.js'
import { MemoryCounterStore } from '../src/ratelimit/MemoryCounterStore.js'
import { SignInThrottle } from '../src/services/accounts/SignInThrottle.js'
import { addMember, type TestMember } from './helpers/members.js'
import { finishOidcFlow, linkWithProvider, startOidcFlow, TestOidcProvider } from './helpers/oidcProvider.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** Where a sign-in ended (the console's fragment), and the callback's answer headers. */
interface Ending {
  token?: string
  error?: string
  headers: Headers
}

/** Posts JSON from a chosen loopback address (127.0.0.x), so that one client's limit is not another test's. */
function postFrom(from: string, url: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', localAddress: from, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode!))
      },
    )
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

const LIMITS = { failuresPerEmail: 3, failuresPerIp: 5, windowMinutes: 15 }

/**
 * An attacker against OIDC sign-in and the invitation's email check: forged ID token claims and algorithms, what
 * the callback leaves in logs and caches, invitations carried through the provider, racing past a limit.
 */
describe('members: attacks on OIDC sign-in and the invitation limit', () => {
  let s: TestServer
  let idp: TestOidcProvider
  let accountKey: string
  let dev: TestMember
  let logged = ''

  beforeAll(async () => {
    idp = await new TestOidcProvider().start()
    const sink = new Writable({
      write(chunk, _enc, done) {
        logged += chunk.toString()
        done()
      },
    })
    s = await startTestServer(
      {
        members: {
          oidc: { name: 'Test IdP', issuer: idp.issuer, clientId: idp.clientId, clientSecret: idp.clientSecret },
          signInLimits: LIMITS,
        },
      },
      { logger: pino({ level: 'info' }, sink) },
    )
    idp.redirectUri = `${s.url}/v2/sessions/oidc/callback`
    accountKey = await s.accountKey('oidc-attacks')
    dev = await addMember(s, accountKey, 'developer', 'oidc-attack-dev')
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
  const callback = async (url: string, cookie: string): Promise<Ending> => {
    const { token, error, headers } = await finishOidcFlow(url, cookie)
    return { token, error, headers }
  }
  const signIn = async (body: Record<string, string> = {}) => {
    const { cookie, callback: url } = await start(body)
    return callback(url, cookie)
  }

  // Each is refused, and the same flow untampered passes (the check is what refused it).
  const tokenAttacks: Array<[string, () => TestOidcProvider['tamper'], RegExp]> = [
    ['signed with alg none', () => ({ alg: 'none' }), /"alg"/],
    ['signed HS256 with the client secret as key', () => ({ alg: 'HS256' }), /"alg"/],
    ['whose email_verified is the string "true"', () => ({ claims: { email_verified: 'true' } }), /not verified/],
    ['without a nonce', () => ({ claims: { nonce: undefined } }), /"nonce"/],
    ['whose aud adds another audience, no azp', () => ({ claims: { aud: [idp.clientId, 'other'] } }), /audiences/],
    ['whose azp names another client', () => ({ claims: { azp: 'other-client' } }), /another client/],
  ]
  for (const [what, tamper, reason] of tokenAttacks) {
    it(`refuses an ID token ${what}; control: untampered, it passes`, async () => {
      idp.tamper = tamper()
      const refused = await signIn()
      expect(refused.token).toBeUndefined()
      expect(refused.error).toMatch(reason)
      idp.tamper = {}
      expect((await signIn()).token).toMatch(/^hs_/)
    })
  }

  it("keeps the callback's code out of the log and its answer (a session token) out of caches and referrers", async () => {
    const { cookie, callback: url } = await start()
    const code = new URL(url).searchParams.get('code')!
    const ended = await callback(url, cookie)
    expect(ended.token).toMatch(/^hs_/)
    expect(ended.headers.get('cache-control')).toBe('no-store')
    expect(ended.headers.get('referrer-policy')).toBe('no-referrer')
    // The callback's request line is there (the log is on), without its query.
    expect(logged).toContain('GET /v2/sessions/oidc/callback 303')
    expect(logged).not.toContain(code)
    expect(logged).not.toContain(ended.token)
    expect(JSON.stringify((await s.api('GET', '/v2/audit', undefined, accountKey)).body)).not.toContain(ended.token)
  })

  it('lets an invitation carried by two sign-ins at once make one member only', async () => {
    const inv = await s.api('POST', '/v2/invitations', { role: 'read-only' }, accountKey)
    idp.user = { sub: 'x1', email: `x1-${randomUUID()}@example.com`, email_verified: true }
    const a = await start({ invitation: inv.body.token })
    idp.user = { sub: 'x2', email: `x2-${randomUUID()}@example.com`, email_verified: true }
    const b = await start({ invitation: inv.body.token })
    const ends = await Promise.all([callback(a.callback, a.cookie), callback(b.callback, b.cookie)])
    expect(ends.filter((e) => e.token)).toHaveLength(1)
    expect(ends.find((e) => e.error)?.error).toContain('used, revoked or has expired')
  })

  it('refuses an invitation revoked while its sign-in was at the provider; control: unrevoked, it joins', async () => {
    idp.user = { sub: 'x3', email: `x3-${randomUUID()}@example.com`, email_verified: true }
    const inv = await s.api('POST', '/v2/invitations', { role: 'read-only' }, accountKey)
    const flow = await start({ invitation: inv.body.token })
    expect((await s.api('DELETE', `/v2/invitations/${inv.body.id}`, undefined, accountKey)).status).toBe(204)
    expect((await callback(flow.callback, flow.cookie)).error).toContain('used, revoked or has expired')
    const again = await s.api('POST', '/v2/invitations', { role: 'read-only' }, accountKey)
    expect((await signIn({ invitation: again.body.token })).token).toMatch(/^hs_/)
  })

  it("refuses an invitation joined with a member's email (no second identity for them, whatever the role)", async () => {
    const inv = await s.api('POST', '/v2/invitations', { role: 'owner' }, accountKey)
    const refused = await signIn({ invitation: inv.body.token })
    expect(refused.error).toContain("already a member's")
    const me = (await s.api('GET', '/v2/me', undefined, (await signIn()).token)).body
    expect(me.member).toMatchObject({ id: dev.id, role: 'developer' })
  })

  it("holds racing invitation acceptances to the address's limit (which emails are members' is not free to ask)", async () => {
    // Each with an invitation of its own: a member's email answers 409, another joins (201); past the limit,
    // all must answer 429 alike, or the race tells members' emails from others past the limit.
    const invitations = []
    for (let i = 0; i < 16; i++)
      invitations.push((await s.api('POST', '/v2/invitations', { role: 'read-only' }, accountKey)).body.token)
    const statuses = await Promise.all(
      invitations.map((token, i) =>
        postFrom('127.0.0.9', `${s.url}/v2/invitations/accept`, {
          token,
          email: i % 2 ? dev.email : `race-${randomUUID()}@example.com`,
          password: 'correct horse battery race',
        }),
      ),
    )
    expect(statuses.filter((x) => x !== 429).length, statuses.join(' ')).toBeLessThanOrEqual(LIMITS.failuresPerIp)
  })
})

/**
 * One client, many addresses: an IPv6 host is given a whole /64, so a limit per address would give it 2^64
 * budgets of guesses across members' emails. No test machine can send from several IPv6 addresses of its own
 * (the loopback has one), so the throttle is driven directly, on the real in-memory counters.
 */
describe('members: the per-address sign-in limit counts an IPv6 /64 as one client', () => {
  const limits = { failuresPerEmail: 100, failuresPerIp: 3, windowMinutes: 15 }
  const throttle = new SignInThrottle({ counters: new MemoryCounterStore(), clock: systemClock, limits })
  const wrong = () => Promise.reject(new DomainError('unauthorized', 'email or password is wrong'))
  const attempt = (ip: string, n: number) =>
    throttle.guard(`spray-${n}@example.com`, ip, wrong).catch((err: DomainError) => err.kind)

  it('refuses the /64 past its limit whichever of its addresses asks; control: another /64 is not held to it', async () => {
    const kinds = []
    for (let i = 1; i <= 6; i++) kinds.push(await attempt(`2001:db8:1:2::${i.toString(16)}`, i))
    expect(kinds).toEqual(['unauthorized', 'unauthorized', 'unauthorized', ...Array(3).fill('too_many_requests')])
    expect(await attempt('2001:db8:1:3::1', 7)).toBe('unauthorized')
    // IPv4-mapped IPv6 (a dual-stack listener) is the IPv4 address's budget.
    for (let i = 0; i < 3; i++) await attempt('10.1.2.3', 10 + i)
    expect(await attempt('::ffff:10.1.2.3', 13)).toBe('too_many_requests')
  })
})
