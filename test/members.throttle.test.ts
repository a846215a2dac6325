import { randomUUID } from 'node:crypto'
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { addMember, type TestMember } from './helpers/members.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** Posts JSON from a chosen loopback address (127.0.0.x), so that one test plays several clients. */
function postFrom(
  from: string,
  url: string,
  body: unknown,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', localAddress: from, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = ''
        res.on('data', (c) => (text += c))
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined }),
        )
      },
    )
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

const LIMITS = { failuresPerEmail: 3, failuresPerIp: 5, windowMinutes: 15 }

describe('members: failed password sign-ins are limited per email and per address', () => {
  let s: TestServer
  let accountKey: string
  const member = {} as Record<'a' | 'b' | 'c', TestMember>

  beforeAll(async () => {
    s = await startTestServer({ members: { signInLimits: LIMITS } })
    accountKey = await s.accountKey('throttled')
    for (const k of ['a', 'b', 'c'] as const) member[k] = await addMember(s, accountKey, 'developer', `throttle-${k}`)
  })
  afterAll(async () => {
    await s?.stop()
  })

  const signIn = (from: string, email: string, password: string) =>
    postFrom(from, `${s.url}/v2/sessions`, { email, password })

  it('refuses an email past its failures, even with the right password, naming the limit; another email passes', async () => {
    const { email, password } = member.a
    for (let i = 0; i < LIMITS.failuresPerEmail; i++)
      expect((await signIn('127.0.0.2', email, `wrong password ${i}`)).status).toBe(401)
    // From another address too: the email's limit is the email's, wherever the guesses come from.
    const refused = await signIn('127.0.0.3', email, password)
    expect(refused.status).toBe(429)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(15 * 60)
    expect(refused.headers['content-type']).toContain('application/problem+json')
    expect(refused.body.detail).toContain('too many failed sign-ins for this email: the limit is 3 per 15 min')
    // Control: the address that made the failures still signs in another member.
    expect((await signIn('127.0.0.2', member.b.email, member.b.password)).status).toBe(201)
  })

  it('refuses an address past its failures, whatever the email; another address passes', async () => {
    for (let i = 0; i < LIMITS.failuresPerIp; i++)
      expect((await signIn('127.0.0.4', `nobody-${randomUUID()}@example.com`, 'wrong password')).status).toBe(401)
    const refused = await signIn('127.0.0.4', member.b.email, member.b.password)
    expect(refused.status).toBe(429)
    expect(refused.body.detail).toContain('from this address: the limit is 5 per 15 min')
    expect((await signIn('127.0.0.5', member.b.email, member.b.password)).status).toBe(201)
  })

  it("a success elsewhere does not clear an email's failures counted from another address", async () => {
    const { email, password } = member.c
    expect((await signIn('127.0.0.6', email, 'wrong password 1')).status).toBe(401)
    expect((await signIn('127.0.0.6', email, 'wrong password 2')).status).toBe(401)
    expect((await signIn('127.0.0.7', email, password)).status).toBe(201)
    // The third failure is still allowed, the fourth attempt is not: the success gave back only its own attempt.
    expect((await signIn('127.0.0.6', email, 'wrong password 3')).status).toBe(401)
    expect((await signIn('127.0.0.6', email, password)).status).toBe(429)
  })

  it('holds under racing attempts: exactly the limit of them get a password checked', async () => {
    const email = `racing-${randomUUID()}@example.com`
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => signIn(`127.0.1.${i + 1}`, email, `wrong password ${i}`)),
    )
    const statuses = answers.map((a) => a.status).sort()
    expect(statuses.filter((x) => x === 401)).toHaveLength(LIMITS.failuresPerEmail)
    expect(statuses.filter((x) => x === 429)).toHaveLength(12 - LIMITS.failuresPerEmail)
  })

  it("holds the invitation's email check to the address's limit (which emails are members' is not free to ask)", async () => {
    const inv = await s.api('POST', '/v2/invitations', { role: 'read-only' }, accountKey)
    const accept = (from: string, email: string) =>
      postFrom(from, `${s.url}/v2/invitations/accept`, {
        token: inv.body.token,
        email,
        password: 'a long enough password',
      })
    const taken = [member.a, member.b, member.c]
    for (let i = 0; i < LIMITS.failuresPerIp; i++)
      expect((await accept('127.0.0.8', taken[i % 3].email)).status).toBe(409)
    expect((await accept('127.0.0.8', member.a.email)).status).toBe(429)
    // Even a free email is refused from there now: the answer no longer tells members' emails from others.
    expect((await accept('127.0.0.8', `free-${randomUUID()}@example.com`)).status).toBe(429)
    // Control: the same link from another address still works for a free email.
    expect((await accept('127.0.0.9', `free-${randomUUID()}@example.com`)).status).toBe(201)
  })
})

describe('members: sign-in limits, control without them', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({ members: { signInLimits: { failuresPerEmail: 1000, failuresPerIp: 1000 } } })
    const key = await s.accountKey('unthrottled')
    await addMember(s, key, 'developer', 'unthrottled')
  })
  afterAll(async () => {
    await s?.stop()
  })

  it('lets every racing guess have its password checked when the limit is out of reach', async () => {
    const email = `racing-${randomUUID()}@example.com`
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        postFrom('127.0.0.2', `${s.url}/v2/sessions`, { email, password: `guess ${i}` }),
      ),
    )
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(401))
  })
})

describe('members: sign-in limits shared by two replicas through Redis', () => {
  const redisUrl = process.env.HANGAR_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
  let one: TestServer
  let two: TestServer
  beforeAll(async () => {
    // Two control planes, each with its own data, one Redis: the email counter is the fleet's.
    const config = { redisUrl, members: { signInLimits: { ...LIMITS, failuresPerIp: 1000 } } }
    one = await startTestServer(config, { sqlite: true })
    two = await startTestServer(config, { sqlite: true })
  })
  afterAll(async () => {
    await one?.stop()
    await two?.stop()
  })

  it("counts one replica's failures on the other", async () => {
    const email = `shared-${randomUUID()}@example.com`
    for (let i = 0; i < LIMITS.failuresPerEmail; i++)
      expect((await postFrom('127.0.0.2', `${one.url}/v2/sessions`, { email, password: `guess ${i}` })).status).toBe(
        401,
      )
    expect((await postFrom('127.0.0.2', `${two.url}/v2/sessions`, { email, password: 'guess' })).status).toBe(429)
    // Control: another email on the second replica is only checked.
    const other = `shared-${randomUUID()}@example.com`
    expect((await postFrom('127.0.0.2', `${two.url}/v2/sessions`, { email: other, password: 'guess' })).status).toBe(
      401,
    )
  })
})
