import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseList, type Item } from 'structured-headers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { spawnServe } from './helpers/process.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** Parses a RateLimit-style header into { window: { param: value } }. */
function members(header: string | null): Record<string, Record<string, unknown>> {
  expect(header).toBeTruthy()
  return Object.fromEntries(parseList(header!).map((m) => [String((m as Item)[0]), Object.fromEntries((m as Item)[1])]))
}

describe('management API quotas', () => {
  let s: TestServer
  const clock = new ManualClock()
  beforeAll(async () => {
    // Start of a day: no window rolls over while the test runs.
    clock.set(Math.ceil(Date.now() / 86_400_000) * 86_400_000)
    s = await startTestServer({ rateLimits: { management: { minute: 3, hour: 100, day: 1000 } } }, { clock })
  })
  afterAll(() => s.stop())

  it('sends RateLimit and RateLimit-Policy as Structured Fields with decreasing remaining counts', async () => {
    const key = await s.accountKey('quota-a')
    const first = await s.api('GET', '/v2/catalog/cpus', undefined, key)
    expect(first.status).toBe(200)
    expect(members(first.headers.get('ratelimit-policy'))).toEqual({
      minute: { q: 3, w: 60 },
      hour: { q: 100, w: 3600 },
      day: { q: 1000, w: 86400 },
    })
    expect(members(first.headers.get('ratelimit'))).toEqual({
      minute: { r: 2, t: 60 },
      hour: { r: 99, t: 3600 },
      day: { r: 999, t: 86400 },
    })
    clock.advance(15_000)
    const second = await s.api('GET', '/v2/catalog/cpus', undefined, key)
    expect(members(second.headers.get('ratelimit'))).toEqual({
      minute: { r: 1, t: 45 },
      hour: { r: 98, t: 3585 },
      day: { r: 998, t: 86385 },
    })
  })

  it('answers 429 at the quota, naming the window, with Retry-After and the headers', async () => {
    const key = await s.accountKey('quota-b')
    for (let i = 0; i < 3; i++) expect((await s.api('GET', '/v2/catalog/gpus', undefined, key)).status).toBe(200)
    const over = await s.api('GET', '/v2/catalog/gpus', undefined, key)
    expect(over.status).toBe(429)
    expect(over.headers.get('content-type')).toMatch(/application\/problem\+json/)
    expect(over.body.detail).toMatch(/minute window/)
    const retry = Number(over.headers.get('retry-after'))
    expect(Number.isInteger(retry) && retry >= 1 && retry <= 60).toBe(true)
    expect(members(over.headers.get('ratelimit')).minute).toMatchObject({ r: 0 })
    // Another account has its own budget.
    expect((await s.api('GET', '/v2/catalog/gpus', undefined, await s.accountKey('quota-c'))).status).toBe(200)
    // The next window admits again.
    clock.advance(60_000)
    expect((await s.api('GET', '/v2/catalog/gpus', undefined, key)).status).toBe(200)
  })

  it('sends no headers to admin keys or exempt accounts, and never limits them', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await s.api('GET', '/v2/catalog/gpus')
      expect(r.status).toBe(200)
      expect(r.headers.get('ratelimit')).toBeNull()
      expect(r.headers.get('ratelimit-policy')).toBeNull()
    }
    await s.api('POST', '/v2/admin/accounts', { name: 'exempt-co', rateLimitExempt: true })
    const key = (await s.api('POST', '/v2/admin/keys', { account: 'exempt-co', permission: 'ALL' })).body.key
    for (let i = 0; i < 5; i++)
      expect((await s.api('GET', '/v2/catalog/gpus', undefined, key)).headers.get('ratelimit')).toBeNull()
  })

  it('sends no headers on unauthenticated responses', async () => {
    const r = await s.api('GET', '/v2/catalog/gpus', undefined, null)
    expect(r.status).toBe(401)
    expect(r.headers.get('ratelimit')).toBeNull()
  })
})

// Two whole server processes: on a loaded machine their starts alone can take tens of seconds.
describe('two control-plane processes sharing Redis', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-replicas-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('enforce one combined budget per account', async () => {
    const configFile = join(dir, 'config.json')
    // Only the hour window is small, so a minute rolling over mid-test cannot hand out extra requests.
    // Both replicas share one SQLite data dir (one set of accounts and keys), so its lock is off.
    writeFileSync(
      configFile,
      JSON.stringify({
        redisUrl: 'redis://127.0.0.1:6379',
        lockDataDir: false,
        rateLimits: { management: { minute: 1000, hour: 6, day: 1000 } },
      }),
    )
    const env = { HANGAR_CONFIG: configFile }
    const a = await spawnServe(join(dir, 'data'), env)
    const b = await spawnServe(join(dir, 'data'), env)
    try {
      const adminKey = (await import('node:fs')).readFileSync(join(dir, 'data', 'admin-key'), 'utf8').trim()
      const admin = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }
      // A unique account name, so runs against the same Redis never share counters.
      const name = `replica-${Date.now()}`
      expect(
        (await fetch(`${a.url}/v2/admin/accounts`, { method: 'POST', headers: admin, body: JSON.stringify({ name }) }))
          .status,
      ).toBe(201)
      const created = await fetch(`${b.url}/v2/admin/keys`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ account: name, permission: 'ALL' }),
      })
      const key = ((await created.json()) as { key: string }).key
      const statuses: number[] = []
      for (let i = 0; i < 8; i++) {
        const url = i % 2 === 0 ? a.url : b.url
        statuses.push((await fetch(`${url}/v2/catalog/gpus`, { headers: { authorization: `Bearer ${key}` } })).status)
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 429, 429])
    } finally {
      a.child.kill('SIGTERM')
      b.child.kill('SIGTERM')
      await Promise.all([a.exited, b.exited])
    }
  })
})
