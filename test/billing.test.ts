import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AnyBillingQuery, BillingHistory } from '../src/contract/billing.js'
import { BUCKET_SIZES } from '../src/domain/billing/buckets.js'
import { resolveQuery } from '../src/domain/billing/query.js'
import { buildRecords } from '../src/domain/billing/records.js'
import { ROUTES, type BillingRoute } from '../src/domain/billing/routes.js'
import { intervalPieces, type UsageInterval, type UsageSubject } from '../src/domain/billing/usage.js'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { dropSchema, freshSchemaName } from './helpers/postgres.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'
import { prng } from './helpers/prng.js'

const T0 = Date.parse('2026-03-14T10:00:00Z')
const H = 3_600_000
/** USD of `micros` micro-dollars, as responses carry them. */
const usd = (micros: number) => micros / 1e6

describe('billing on the injected clock', () => {
  let s: TestServer
  const clock = new ManualClock()
  let alice: string
  let bob: string
  beforeAll(async () => {
    clock.set(T0)
    s = await startTestServer(
      { jobs: { pingIntervalMs: 500, sweepIntervalMs: 100, crashBackoffMs: 200, crashBackoffMaxMs: 400 } },
      { clock },
    )
    alice = await s.accountKey('bill-alice')
    bob = await s.accountKey('bill-bob')
  })
  afterAll(() => s.stop())

  const get = async (path: string, key = alice) => {
    await s.hangar.meter.flush()
    return s.api('GET', path, undefined, key)
  }

  /** Runs one job so the endpoint has a ready worker; returns the worker id. */
  async function readyWorker(ep: string, key: string): Promise<string> {
    const r = await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: { x: 1 } }, { key })
    expect(r.body.status).toBe('COMPLETED')
    return s.hangar.workers.snapshot(ep)[0].id
  }

  it('bills a worker serving exactly N seconds N x its price, per vCPU and per GB of disk', async () => {
    const ep = (await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'billed', disk: 20 }), alice)).id
    clock.set(T0)
    const worker = await readyWorker(ep, alice)
    clock.advance(1_234_000)
    await s.hangar.workers.stop(worker, 'test')
    const r = await get(
      `/v2/billing/serverless?grouping=podId&bucketSize=hour&startTime=2026-03-14T10:00:00Z&endTime=2026-03-14T11:00:00Z`,
    )
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    // cpu3c serverless: 0.036 USD per vCPU-hour x 2 vCPUs = 72,000 micro-dollars/h; 1,234 s -> 24,680.
    // Disk: 0.10 USD per GB-month (730 h) x 20 GB = 2,000,000 per 2,628,000,000 ms; 1,234,000 ms -> 939 (939.1...).
    expect(r.body.records).toEqual([
      {
        startTime: '2026-03-14T10:00:00.000Z',
        endTime: '2026-03-14T11:00:00.000Z',
        serverlessId: ep,
        podId: worker,
        gpuId: null,
        totalAmount: usd(24_680 + 939),
        gpuAmount: 0,
        cpuAmount: usd(24_680),
        diskAmount: usd(939),
        feeAmount: 0,
      },
    ])
    expect(r.body.metadata).toEqual({
      query: {
        startTime: '2026-03-14T10:00:00.000Z',
        endTime: '2026-03-14T11:00:00.000Z',
        bucketSize: 'hour',
        grouping: 'podId',
        serverlessId: null,
        podId: null,
        gpuId: null,
      },
      recordCount: 1,
      totals: { totalAmount: usd(25_619), gpuAmount: 0, cpuAmount: usd(24_680), diskAmount: usd(939), feeAmount: 0 },
      uniqueServerlessCount: 1,
    })
    // The default grouping is the endpoint; the aggregate agrees.
    const byEndpoint = await get(
      `/v2/billing/serverless?endpointId=${ep}&startTime=2026-03-14T00:00:00Z&endTime=2026-03-15T00:00:00Z`,
    )
    expect(byEndpoint.body.records.map((x: any) => [x.serverlessId, x.podId, x.totalAmount])).toEqual([
      [ep, null, usd(25_619)],
    ])
    const all = await get(`/v2/billing?startTime=2026-03-14T00:00:00Z&endTime=2026-03-15T00:00:00Z`)
    expect(all.body.records).toHaveLength(1)
    expect(all.body.records[0]).toMatchObject({
      serverlessCpuAmount: usd(24_680),
      serverlessDiskAmount: usd(939),
      totalAmount: usd(25_619),
    })
    await s.api('DELETE', `/v2/serverless/${ep}`, undefined, alice)
  })

  it('does not bill a FlashBoot worker while it is parked', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/echo:latest', { name: 'parked', disk: 1, flashboot: 'FLASHBOOT' }),
        bob,
      )
    ).id
    const start = clock.now()
    const worker = await readyWorker(ep, bob)
    clock.advance(600_000)
    expect(s.hangar.workers.park(worker, 'test', false)).toBe(true)
    clock.advance(3 * H)
    expect(s.hangar.workers.unpark(worker)).toBe(true)
    clock.advance(600_000)
    await s.hangar.workers.stop(worker, 'test')
    const r = await get(
      `/v2/billing/serverless?startTime=${new Date(start).toISOString()}&endTime=${new Date(clock.now() + 1).toISOString()}&bucketSize=hour`,
      bob,
    )
    // 20 minutes served in all: 72,000 / 3 = 24,000 of CPU.
    expect(r.body.metadata.totals.cpuAmount).toBe(usd(24_000))
    await s.api('DELETE', `/v2/serverless/${ep}`, undefined, bob)
  })

  it('bills nothing to a crash-looping endpoint while it backs off', async () => {
    const key = await s.accountKey('bill-crashy')
    const from = new Date(clock.now()).toISOString()
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/echo:latest', { name: 'crashy', entrypoint: [process.execPath, '-e', 'process.exit(3)'] }),
        key,
      )
    ).id
    await jobCall(s, 'POST', `/v2/${ep}/run`, { input: {} }, { key })
    await until(
      async () => {
        clock.advance(60_000)
        return (await s.hangar.store.workers.listRecent(ep, 10)).filter((w) => w.state === 'FAILED').length >= 3
      },
      20_000,
      'three failed starts',
    )
    const r = await get(
      `/v2/billing/serverless?startTime=${from}&endTime=${new Date(clock.now() + 1).toISOString()}&bucketSize=hour`,
      key,
    )
    expect(r.body.records).toEqual([])
    expect(r.body.metadata.totals.totalAmount).toBe(0)
    expect(r.body.metadata.uniqueServerlessCount).toBe(0)
    await s.api('DELETE', `/v2/serverless/${ep}`, undefined, key)
  })

  it('bills network volumes GB x time by type, following growth and deletion, and hourly = daily = aggregate', async () => {
    const key = await s.accountKey('bill-volumes')
    clock.set(Date.parse('2026-04-01T00:00:00Z'))
    const std = (
      await s.api(
        'POST',
        '/v2/network-volumes',
        { name: 'std', size: 100, dataCenter: 'LOCAL-1', type: 'STANDARD' },
        key,
      )
    ).body
    const hp = (
      await s.api(
        'POST',
        '/v2/network-volumes',
        { name: 'hp', size: 50, dataCenter: 'LOCAL-1', type: 'HIGH_PERFORMANCE' },
        key,
      )
    ).body
    clock.advance(146 * H)
    expect((await s.api('DELETE', `/v2/network-volumes/${hp.id}`, undefined, key)).status).toBe(204)
    clock.advance(730 * H - 146 * H)
    expect((await s.api('PATCH', `/v2/network-volumes/${std.id}`, { size: 200 }, key)).status).toBe(200)
    clock.advance(73 * H)
    expect((await s.api('DELETE', `/v2/network-volumes/${std.id}`, undefined, key)).status).toBe(204)
    clock.advance(H)

    // STANDARD 0.07/GB-month: 100 GB x 730 h = 7.00, then 200 GB x 73 h = 1.40. HIGH_PERFORMANCE 0.14: 50 GB x 146 h = 1.40.
    const range = 'startTime=2026-04-01T00:00:00Z&endTime=2026-05-15T00:00:00Z'
    const daily = await get(`/v2/billing/network-volumes?${range}`, key)
    expect(daily.status).toBe(200)
    expect(daily.body.metadata).toMatchObject({
      recordCount: expect.any(Number),
      totals: { totalAmount: 9.8, standardAmount: 8.4, highPerformanceAmount: 1.4 },
      uniqueNetworkVolumeCount: 2,
    })
    expect(new Set(daily.body.records.map((x: any) => x.networkVolumeId))).toEqual(new Set([std.id, hp.id]))
    const micros = (records: any[], field: string) => records.reduce((sum, x) => sum + Math.round(x[field] * 1e6), 0)
    for (const size of ['hour', 'day', 'week', 'month', 'year']) {
      const byVolume = await get(`/v2/billing/network-volumes?${range}&bucketSize=${size}`, key)
      expect(byVolume.status, JSON.stringify(byVolume.body)).toBe(200)
      expect(micros(byVolume.body.records, 'totalAmount'), size).toBe(9_800_000)
      const aggregate = await get(`/v2/billing?${range}&bucketSize=${size}`, key)
      expect(micros(aggregate.body.records, 'storageStandardAmount'), size).toBe(8_400_000)
      expect(aggregate.body.metadata.totals).toMatchObject({ totalAmount: 9.8, storageHighPerformanceAmount: 1.4 })
    }
    // Filtered to one volume.
    const one = await get(`/v2/billing/network-volumes?${range}&bucketSize=month&networkVolumeId=${hp.id}`, key)
    expect(one.body.records).toEqual([
      {
        startTime: '2026-04-01T00:00:00.000Z',
        endTime: '2026-05-01T00:00:00.000Z',
        networkVolumeId: hp.id,
        totalAmount: 1.4,
        standardAmount: 0,
        highPerformanceAmount: 1.4,
      },
    ])
    expect(one.body.metadata.query).toEqual({
      startTime: '2026-04-01T00:00:00.000Z',
      endTime: '2026-06-01T00:00:00.000Z',
      bucketSize: 'month',
      networkVolumeId: hp.id,
    })
  })

  it('shows each account only its own usage; an admin key reads any account and a per-account summary', async () => {
    const key = await s.accountKey('bill-tenant')
    clock.set(Date.parse('2026-06-01T00:00:00Z'))
    const vol = (await s.api('POST', '/v2/network-volumes', { name: 'mine', size: 10, dataCenter: 'LOCAL-1' }, key))
      .body
    clock.advance(73 * H)
    const range = 'startTime=2026-06-01T00:00:00Z&endTime=2026-06-05T00:00:00Z'
    // 10 GB x 0.07 x 73/730 = 0.07, still accruing (open interval, up to now).
    expect((await get(`/v2/billing/network-volumes?${range}`, key)).body.metadata.totals.totalAmount).toBe(0.07)
    expect((await get(`/v2/billing/network-volumes?${range}`, bob)).body.records).toEqual([])
    expect((await get(`/v2/billing/network-volumes?${range}&networkVolumeId=${vol.id}`, bob)).body.records).toEqual([])
    const admin = await get(`/v2/billing/network-volumes?${range}&account=bill-tenant`, s.adminKey)
    expect(admin.body.metadata.totals.totalAmount).toBe(0.07)
    expect(admin.body.metadata.query.account).toMatch(/^acc_/)
    expect((await get(`/v2/billing/network-volumes?${range}`, s.adminKey)).body.records).toEqual([])
    const denied = await get(`/v2/billing/network-volumes?account=bill-tenant`, bob)
    expect(denied.status).toBe(403)
    expect(denied.body.detail).toMatch(/^account: only admin keys/)
    expect((await get(`/v2/billing?account=nobody`, s.adminKey)).status).toBe(404)
    const summary = await get(`/v2/admin/billing/accounts?${range}`, s.adminKey)
    expect(summary.status).toBe(200)
    expect(summary.body.accounts.find((a: any) => a.accountName === 'bill-tenant')).toMatchObject({
      totalAmount: 0.07,
      storageStandardAmount: 0.07,
    })
    expect(summary.body.accounts.find((a: any) => a.accountName === 'bill-bob')).toMatchObject({ totalAmount: 0 })
    expect(summary.body.metadata).toMatchObject({
      query: { startTime: '2026-06-01T00:00:00.000Z', endTime: '2026-06-05T00:00:00.000Z', bucketSize: 'day' },
      totals: { totalAmount: 0.07 },
    })
    expect((await get(`/v2/admin/billing/accounts`, key)).status).toBe(403)
    // A RESTRICTED key must name an endpoint of its own account.
    const own = await createEndpoint(s, endpointBody(), key)
    const restricted = await s.accountKey('bill-tenant', 'RESTRICTED', [own.id])
    expect((await get('/v2/billing', restricted)).status).toBe(403)
  })

  it('answers /v2/billing/endpoints (public endpoints, none in Hangar) with no records', async () => {
    const r = await get('/v2/billing/endpoints?lastN=2&bucketSize=week')
    expect(r.status).toBe(200)
    expect(r.body.records).toEqual([])
    expect(r.body.metadata).toMatchObject({ recordCount: 0, totals: { totalAmount: 0 } })
  })

  it.each([
    [
      '/v2/billing?bucketSize=minute',
      422,
      'query.bucketSize: must be one of "hour", "day", "week", "month", "year", got "minute"',
    ],
    ['/v2/billing?startTime=yesterday', 422, 'query.startTime: must be a valid date-time, got "yesterday"'],
    ['/v2/billing?endTime=2026-13-01T00:00:00Z', 422, 'query.endTime: must be a valid date-time'],
    ['/v2/billing?lastN=0', 422, 'query.lastN: must be >= 1'],
    ['/v2/billing?lastN=many', 422, 'query.lastN: must be integer'],
    ['/v2/billing?lastN=10001', 422, 'query.lastN: must be <= 10000'],
    ['/v2/billing/pods?grouping=endpointId', 422, 'query.grouping: must be one of "podId", "gpuId", "gpuTypeId"'],
    ['/v2/billing/network-volumes?grouping=podId', 422, "query: additional properties 'grouping' not allowed"],
    ['/v2/billing/network-volumes?podId=p1', 422, "query: additional properties 'podId' not allowed"],
    ['/v2/billing/pods?serverlessId=x', 422, "query: additional properties 'serverlessId' not allowed"],
    ['/v2/billing/serverless?podId=', 422, 'query.podId: must NOT have fewer than 1 characters'],
    ['/v2/billing?lastN=3&startTime=2026-01-01T00:00:00Z', 400, 'lastN: cannot be combined with startTime'],
    [
      '/v2/billing?startTime=2026-03-02T00:00:00Z&endTime=2026-03-01T00:00:00Z',
      400,
      'startTime: 2026-03-02T00:00:00Z is not before endTime 2026-03-01T00:00:00Z',
    ],
    [
      '/v2/billing?startTime=2020-01-01T00:00:00Z&endTime=2026-01-01T00:00:00Z&bucketSize=hour',
      400,
      'bucketSize: the range',
    ],
    ['/v2/billing/serverless?serverlessId=a&endpointId=b', 400, 'endpointId: "b" differs from serverlessId "a"'],
  ])('refuses %s with %i naming the parameter', async (path, status, line) => {
    const r = await get(path)
    expect(r.status).toBe(status)
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(r.body.errors?.[0] ?? r.body.detail).toContain(line)
  })
})

describe('billing roll-ups against the raw ledger', () => {
  // A ledger of about 85 days (from December into March), written straight into the store, with intervals across
  // hour, day, month and year bounds, exact bounds, a 1 ms sliver, empty and free ones, running ones and another
  // account's. Every history is asked of the API (read from the roll-ups) and computed here from the intervals.
  const NOW = Date.parse('2026-03-14T10:27:13.123Z')
  const FIRST = Date.parse('2025-12-20T00:00:00Z')
  const MONTH = 730 * H
  const clock = new ManualClock()
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-billing-rollups-'))
  const pgUrl = process.env.HANGAR_TEST_DATABASE_URL
  const database = pgUrl ? { databaseUrl: pgUrl, databaseSchema: freshSchemaName() } : {}
  let s: TestServer
  let key: string
  let accountId: string
  /** The ledger as written: each interval's subject, start and end (null: running). */
  const ledger: Array<UsageSubject & { id: number; startedAt: number; endedAt: number | null }> = []
  const start = () => startTestServer(database, { clock, dataDir })

  beforeAll(async () => {
    clock.set(NOW)
    s = await start()
    key = await s.accountKey('bill-rollups')
    accountId = (await s.hangar.store.accounts.getByName('bill-rollups'))!.id
    const usage = s.hangar.store.usage
    const rand = prng(20260314)
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]
    const subject = (
      over: Partial<UsageSubject> & Pick<UsageSubject, 'product' | 'component' | 'resourceId'>,
    ): UsageSubject => ({
      accountId,
      partId: null,
      gpuTypeId: null,
      quantity: 1,
      priceMicros: 1_116_001,
      periodMs: H,
      ...over,
    })
    const t = (iso: string) => Date.parse(iso)
    // Each pod and worker has one GPU type (null: CPU), as records grouped by them name it. p5 (below) costs nothing.
    const pods = { p1: 'NVIDIA L4', p2: null, p3: 'NVIDIA X', p4: 'NVIDIA A40' } as const
    const workerGpu = ['NVIDIA L4', 'NVIDIA A40', null] as const
    const closed: Array<[UsageSubject, number, number]> = [
      [
        subject({
          product: 'pod',
          component: 'gpu',
          resourceId: 'p1',
          partId: 'compute',
          gpuTypeId: 'NVIDIA L4',
          quantity: 2,
          priceMicros: 1_380_000,
        }),
        t('2026-01-31T23:10:00Z'),
        t('2026-02-01T02:20:00.500Z'),
      ],
      [
        subject({
          product: 'pod',
          component: 'disk',
          resourceId: 'p1',
          partId: 'disk',
          gpuTypeId: 'NVIDIA L4',
          quantity: 50,
          priceMicros: 5_000_001,
          periodMs: MONTH,
        }),
        t('2025-12-30T12:00:00Z'),
        t('2026-02-02T00:00:00Z'),
      ],
      [
        subject({
          product: 'pod',
          component: 'cpu',
          resourceId: 'p2',
          partId: 'compute',
          quantity: 4,
          priceMicros: 96_000,
        }),
        t('2026-02-10T10:00:00Z'),
        t('2026-02-10T12:00:00Z'),
      ],
      [
        subject({
          product: 'pod',
          component: 'gpu',
          resourceId: 'p5',
          partId: 'compute',
          gpuTypeId: 'NVIDIA X',
          priceMicros: 0,
        }),
        t('2026-02-11T00:30:00Z'),
        t('2026-02-11T05:00:00Z'),
      ],
      [
        subject({
          product: 'pod',
          component: 'gpu',
          resourceId: 'p4',
          partId: 'compute',
          gpuTypeId: 'NVIDIA A40',
          priceMicros: 3_600_000,
        }),
        t('2026-02-20T23:00:00Z'),
        t('2026-02-21T00:00:00.001Z'),
      ],
      [
        subject({ product: 'serverless', component: 'gpu', resourceId: 'e1', partId: 'e1-w0', gpuTypeId: 'NVIDIA L4' }),
        t('2026-02-12T08:00:00Z'),
        t('2026-02-12T08:00:00Z'),
      ],
      [
        subject({
          product: 'serverless',
          component: 'fee',
          resourceId: 'e1',
          partId: 'e1-w0',
          gpuTypeId: 'NVIDIA L4',
          priceMicros: 7,
        }),
        t('2025-12-31T23:59:59.999Z'),
        t('2026-01-01T00:00:00.001Z'),
      ],
    ]
    const random = (): Omit<UsageSubject, 'accountId' | 'quantity' | 'priceMicros' | 'periodMs'> => {
      const product = pick(['pod', 'pod', 'serverless', 'serverless', 'volume', 'cluster'] as const)
      if (product === 'pod') {
        const [resourceId, gpuTypeId] = pick(Object.entries(pods))
        return rand() < 0.5
          ? { product, resourceId, gpuTypeId, partId: 'compute', component: gpuTypeId ? 'gpu' : 'cpu' }
          : { product, resourceId, gpuTypeId, partId: 'disk', component: 'disk' }
      }
      if (product === 'serverless') {
        const resourceId = pick(['e1', 'e2', 'e3'])
        const n = Math.floor(rand() * 6)
        const gpuTypeId = workerGpu[n % 3]
        return {
          product,
          resourceId,
          gpuTypeId,
          partId: `${resourceId}-w${n}`,
          component: pick([gpuTypeId ? 'gpu' : 'cpu', 'disk', 'fee'] as const),
        }
      }
      if (product === 'volume')
        return {
          product,
          resourceId: pick(['v1', 'v2']),
          gpuTypeId: null,
          partId: null,
          component: pick(['standard', 'highPerformance'] as const),
        }
      return {
        product,
        resourceId: pick(['c1', 'c2']),
        gpuTypeId: 'NVIDIA A40',
        partId: `m${Math.floor(rand() * 3)}:compute`,
        component: pick(['gpu', 'disk', 'networking'] as const),
      }
    }
    for (let n = 0; n < 140; n++) {
      const kind = random()
      const monthly = kind.component === 'standard' || kind.component === 'highPerformance' || kind.component === 'disk'
      const from = FIRST + Math.floor(rand() * (NOW - FIRST))
      const to = Math.min(NOW, from + Math.floor(rand() * (rand() < 0.15 ? 20 * 24 * H : 30 * H)))
      closed.push([
        subject({
          ...kind,
          quantity: 1 + Math.floor(rand() * 8),
          priceMicros: Math.floor(rand() * (monthly ? 400_000_000 : 40_000_000)),
          periodMs: monthly ? MONTH : H,
        }),
        from,
        to,
      ])
    }
    // Another account's use of the same names is never in these histories.
    closed.push([
      {
        ...subject({ product: 'pod', component: 'gpu', resourceId: 'p1', gpuTypeId: 'NVIDIA L4' }),
        accountId: 'acc_other',
      },
      FIRST,
      NOW - H,
    ])
    // Most go in at once; some close one by one, as the meter closes them.
    const batch = closed.filter((_, n) => n % 5 !== 0)
    await usage.insertClosed(batch.map(([subj, startedAt, endedAt]) => ({ ...subj, startedAt, endedAt })))
    for (const [subj, startedAt, endedAt] of batch) ledger.push({ ...subj, id: 0, startedAt, endedAt })
    for (const [subj, startedAt, endedAt] of closed.filter((_, n) => n % 5 === 0)) {
      const i = await usage.open(subj, startedAt)
      await usage.close([i.id], endedAt)
      ledger.push({ ...i, endedAt })
    }
    const running: Array<[UsageSubject, number]> = [
      [
        subject({
          product: 'volume',
          component: 'standard',
          resourceId: 'v1',
          quantity: 100,
          priceMicros: 7_000_000,
          periodMs: MONTH,
        }),
        t('2026-01-15T07:07:07Z'),
      ],
      [
        subject({ product: 'serverless', component: 'gpu', resourceId: 'e1', partId: 'e1-w3', gpuTypeId: 'NVIDIA L4' }),
        NOW - 90 * 60_000,
      ],
      [
        subject({
          product: 'pod',
          component: 'gpu',
          resourceId: 'p4',
          partId: 'compute',
          gpuTypeId: 'NVIDIA A40',
          priceMicros: 1_290_000,
        }),
        t('2026-03-13T22:00:00Z'),
      ],
      [
        subject({
          product: 'pod',
          component: 'gpu',
          resourceId: 'p5',
          partId: 'compute',
          gpuTypeId: 'NVIDIA X',
          priceMicros: 0,
        }),
        t('2026-03-01T00:00:00Z'),
      ],
    ]
    for (const [subj, at] of running) ledger.push(await usage.open(subj, at))
  })
  afterAll(async () => {
    await s.stop()
    rmSync(dataDir, { recursive: true, force: true })
    if (database.databaseSchema) await dropSchema(database.databaseSchema)
  })

  /** Every history asked: each route and grouping, some filters, every bucket size, a whole and a cut range. */
  const cases = (): Array<{ route: BillingRoute; path: string; q: AnyBillingQuery }> => {
    const shapes: Array<[BillingRoute, string, AnyBillingQuery]> = [
      ['aggregate', '/v2/billing', {}],
      ['pods', '/v2/billing/pods', {}],
      ['pods', '/v2/billing/pods', { grouping: 'podId' }],
      ['pods', '/v2/billing/pods', { grouping: 'podId', podId: 'p1' }],
      ['pods', '/v2/billing/pods', { gpuId: 'NVIDIA L4' }],
      ['serverless', '/v2/billing/serverless', {}],
      ['serverless', '/v2/billing/serverless', { grouping: 'gpuId' }],
      ['serverless', '/v2/billing/serverless', { grouping: 'podId' }],
      ['serverless', '/v2/billing/serverless', { endpointId: 'e1', gpuId: 'NVIDIA L4' }],
      ['serverless', '/v2/billing/serverless', { podId: 'e1-w3' }],
      ['networkVolumes', '/v2/billing/network-volumes', {}],
      ['networkVolumes', '/v2/billing/network-volumes', { networkVolumeId: 'v1' }],
      ['clusters', '/v2/billing/clusters', {}],
    ]
    const ranges = [
      { startTime: '2025-12-19T00:00:00Z', endTime: new Date(NOW + H).toISOString() },
      { startTime: '2026-01-31T13:30:00Z', endTime: '2026-03-02T07:45:00Z' },
    ]
    return shapes.flatMap(([route, path, q]) =>
      BUCKET_SIZES.flatMap((bucketSize) => ranges.map((r) => ({ route, path, q: { ...q, ...r, bucketSize } }))),
    )
  }

  /** The answer computed from the intervals, the way hour histories always were (see BillingService). */
  const fromIntervals = (route: BillingRoute, q: AnyBillingQuery) => {
    const rq = resolveQuery(route, q, NOW)
    const f = rq.filters
    const mine = ledger.filter(
      (i) =>
        i.accountId === accountId &&
        ROUTES[route].products.includes(i.product) &&
        (f.resourceId ?? i.resourceId) === i.resourceId &&
        (f.partId ?? i.partId) === i.partId &&
        (f.gpuTypeId ?? i.gpuTypeId) === i.gpuTypeId,
    )
    const pieces = (i: UsageInterval) =>
      intervalPieces(i, rq.start, rq.end, rq.bucketSize, NOW).filter((p) => p.amount !== 0)
    const built = buildRecords(
      route,
      rq.grouping,
      rq.bucketSize,
      rq.start,
      rq.end,
      mine.flatMap((i) => pieces(i).map((p) => ({ ...i, bucket: p.bucket, amounts: { [i.component]: p.amount } }))),
    )
    // Histories by day and longer count every resource with closed use in the range, costly or not.
    const rolled =
      rq.bucketSize !== 'hour' &&
      rq.filters.partId === undefined &&
      !(route === 'serverless' && rq.grouping === 'podId')
    const used = mine.filter((i) =>
      rolled && i.endedAt !== null
        ? Math.max(rq.start, i.startedAt) < Math.min(rq.end, i.endedAt)
        : pieces(i).length > 0,
    )
    const unique = ROUTES[route].uniqueCount
    return {
      records: built.records,
      totals: Object.fromEntries(Object.entries(built.totals).map(([k, v]) => [k, v / 1e6])),
      ...(unique ? { [unique]: new Set(used.map((i) => i.resourceId)).size } : {}),
    }
  }

  const answers = async () => {
    const out: Record<string, unknown> = {}
    for (const { route, path, q } of cases()) {
      const label = `${path}?${new URLSearchParams(q as Record<string, string>)}`
      const r = await s.api('GET', label, undefined, key)
      expect(r.status, `${label}: ${JSON.stringify(r.body)}`).toBe(200)
      expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8')
      out[label] = r.body
    }
    return out
  }

  it('answers every grouping and bucket size from the roll-ups exactly as from the raw intervals, running ones included', async () => {
    const got = await answers()
    let records = 0
    for (const { route, path, q } of cases()) {
      const label = `${path}?${new URLSearchParams(q as Record<string, string>)}`
      const body = got[label] as BillingHistory
      const want = fromIntervals(route, q)
      expect(body.records, label).toEqual(want.records)
      const { query: _, recordCount, ...metadata } = body.metadata
      expect(metadata, label).toEqual({
        totals: want.totals,
        ...(ROUTES[route].uniqueCount
          ? { [ROUTES[route].uniqueCount!]: (want as Record<string, unknown>)[ROUTES[route].uniqueCount!] }
          : {}),
      })
      expect(recordCount).toBe(want.records.length)
      records += want.records.length
    }
    // The ledger reaches every kind of history (not a comparison of empty answers).
    expect(records).toBeGreaterThan(10_000)
  })

  it('rebuilds the roll-ups from the ledger in its migration exactly as closing intervals built them', async () => {
    await s.hangar.store.usage.close(
      ledger.filter((i) => i.endedAt === null).map((i) => i.id),
      NOW,
    )
    const before = await answers()
    await s.stop()
    const db = await tables()
    const built = await db.rollups()
    expect(built.rollup.length).toBeGreaterThan(1_000)
    await db.exec(
      'DROP TABLE usage_rollup; DROP TABLE usage_rollup_gpu; DELETE FROM schema_migrations WHERE version = 150',
    )
    await db.close()
    s = await start()
    const rebuilt = await tables()
    try {
      expect(await rebuilt.rollups()).toEqual(built)
    } finally {
      await rebuilt.close()
    }
    expect(await answers()).toEqual(before)
  })

  /** The store's own tables, beside the server: its SQLite file, or its PostgreSQL schema. Values as text. */
  async function tables() {
    const text = (rows: Array<Record<string, unknown>>) =>
      rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, String(v)])))
    let rows: (sql: string) => Promise<Array<Record<string, unknown>>>
    let exec: (sql: string) => Promise<unknown>
    let close: () => Promise<void>
    if (database.databaseSchema) {
      const client = new pg.Client({ connectionString: pgUrl })
      await client.connect()
      await client.query(`SET search_path TO "${database.databaseSchema}"`)
      rows = async (sql) => (await client.query(sql)).rows
      exec = (sql) => client.query(sql)
      close = () => client.end()
    } else {
      const db = new Database(join(dataDir, 'hangar.db'))
      rows = async (sql) => db.prepare(sql).all() as Array<Record<string, unknown>>
      exec = async (sql) => db.exec(sql)
      close = async () => void db.close()
    }
    return {
      exec,
      close,
      rollups: async () => ({
        rollup: text(
          await rows(
            'SELECT * FROM usage_rollup ORDER BY account_id, product, grain, bucket, resource_id, gpu_type_id',
          ),
        ),
        gpu: text(
          await rows('SELECT * FROM usage_rollup_gpu ORDER BY account_id, product, grain, bucket, gpu_type_id'),
        ),
      }),
    }
  }
})
