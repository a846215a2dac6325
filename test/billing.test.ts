import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

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
    s = await startTestServer({ jobs: { pingIntervalMs: 500, sweepIntervalMs: 100, crashBackoffMs: 200, crashBackoffMaxMs: 400 } }, { clock })
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
    const r = await get(`/v2/billing/serverless?grouping=podId&bucketSize=hour&startTime=2026-03-14T10:00:00Z&endTime=2026-03-14T11:00:00Z`)
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    // cpu3c serverless: 0.036 USD per vCPU-hour x 2 vCPUs = 72,000 micro-dollars/h; 1,234 s -> 24,680.
    // Disk: 0.10 USD per GB-month (730 h) x 20 GB = 2,000,000 per 2,628,000,000 ms; 1,234,000 ms -> 939 (939.1...).
    expect(r.body.records).toEqual([
      { startTime: '2026-03-14T10:00:00.000Z', endTime: '2026-03-14T11:00:00.000Z', serverlessId: ep, podId: worker, gpuId: null, totalAmount: usd(24_680 + 939), gpuAmount: 0, cpuAmount: usd(24_680), diskAmount: usd(939), feeAmount: 0 },
    ])
    expect(r.body.metadata).toEqual({
      query: { startTime: '2026-03-14T10:00:00.000Z', endTime: '2026-03-14T11:00:00.000Z', bucketSize: 'hour', grouping: 'podId', serverlessId: null, podId: null, gpuId: null },
      recordCount: 1,
      totals: { totalAmount: usd(25_619), gpuAmount: 0, cpuAmount: usd(24_680), diskAmount: usd(939), feeAmount: 0 },
      uniqueServerlessCount: 1,
    })
    // The default grouping is the endpoint; the aggregate agrees.
    const byEndpoint = await get(`/v2/billing/serverless?endpointId=${ep}&startTime=2026-03-14T00:00:00Z&endTime=2026-03-15T00:00:00Z`)
    expect(byEndpoint.body.records.map((x: any) => [x.serverlessId, x.podId, x.totalAmount])).toEqual([[ep, null, usd(25_619)]])
    const all = await get(`/v2/billing?startTime=2026-03-14T00:00:00Z&endTime=2026-03-15T00:00:00Z`)
    expect(all.body.records).toHaveLength(1)
    expect(all.body.records[0]).toMatchObject({ serverlessCpuAmount: usd(24_680), serverlessDiskAmount: usd(939), totalAmount: usd(25_619) })
    await s.api('DELETE', `/v2/serverless/${ep}`, undefined, alice)
  })

  it('does not bill a FlashBoot worker while it is parked', async () => {
    const ep = (await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'parked', disk: 1, flashboot: 'FLASHBOOT' }), bob)).id
    const start = clock.now()
    const worker = await readyWorker(ep, bob)
    clock.advance(600_000)
    expect(s.hangar.workers.park(worker, 'test', false)).toBe(true)
    clock.advance(3 * H)
    expect(s.hangar.workers.unpark(worker)).toBe(true)
    clock.advance(600_000)
    await s.hangar.workers.stop(worker, 'test')
    const r = await get(`/v2/billing/serverless?startTime=${new Date(start).toISOString()}&endTime=${new Date(clock.now() + 1).toISOString()}&bucketSize=hour`, bob)
    // 20 minutes served in all: 72,000 / 3 = 24,000 of CPU.
    expect(r.body.metadata.totals.cpuAmount).toBe(usd(24_000))
    await s.api('DELETE', `/v2/serverless/${ep}`, undefined, bob)
  })

  it('bills nothing to a crash-looping endpoint while it backs off', async () => {
    const key = await s.accountKey('bill-crashy')
    const from = new Date(clock.now()).toISOString()
    const ep = (await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'crashy', entrypoint: [process.execPath, '-e', 'process.exit(3)'] }), key)).id
    await jobCall(s, 'POST', `/v2/${ep}/run`, { input: {} }, { key })
    await until(async () => {
      clock.advance(60_000)
      return (await s.hangar.store.workers.listRecent(ep, 10)).filter((w) => w.state === 'FAILED').length >= 3
    }, 20_000, 'three failed starts')
    const r = await get(`/v2/billing/serverless?startTime=${from}&endTime=${new Date(clock.now() + 1).toISOString()}&bucketSize=hour`, key)
    expect(r.body.records).toEqual([])
    expect(r.body.metadata.totals.totalAmount).toBe(0)
    expect(r.body.metadata.uniqueServerlessCount).toBe(0)
    await s.api('DELETE', `/v2/serverless/${ep}`, undefined, key)
  })

  it('bills network volumes GB x time by type, following growth and deletion, and hourly = daily = aggregate', async () => {
    const key = await s.accountKey('bill-volumes')
    clock.set(Date.parse('2026-04-01T00:00:00Z'))
    const std = (await s.api('POST', '/v2/network-volumes', { name: 'std', size: 100, dataCenter: 'LOCAL-1', type: 'STANDARD' }, key)).body
    const hp = (await s.api('POST', '/v2/network-volumes', { name: 'hp', size: 50, dataCenter: 'LOCAL-1', type: 'HIGH_PERFORMANCE' }, key)).body
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
    expect(daily.body.metadata).toMatchObject({ recordCount: expect.any(Number), totals: { totalAmount: 9.8, standardAmount: 8.4, highPerformanceAmount: 1.4 }, uniqueNetworkVolumeCount: 2 })
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
    expect(one.body.records).toEqual([{ startTime: '2026-04-01T00:00:00.000Z', endTime: '2026-05-01T00:00:00.000Z', networkVolumeId: hp.id, totalAmount: 1.4, standardAmount: 0, highPerformanceAmount: 1.4 }])
    expect(one.body.metadata.query).toEqual({ startTime: '2026-04-01T00:00:00.000Z', endTime: '2026-06-01T00:00:00.000Z', bucketSize: 'month', networkVolumeId: hp.id })
  })

  it('shows each account only its own usage; an admin key reads any account and a per-account summary', async () => {
    const key = await s.accountKey('bill-tenant')
    clock.set(Date.parse('2026-06-01T00:00:00Z'))
    const vol = (await s.api('POST', '/v2/network-volumes', { name: 'mine', size: 10, dataCenter: 'LOCAL-1' }, key)).body
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
    expect(summary.body.accounts.find((a: any) => a.accountName === 'bill-tenant')).toMatchObject({ totalAmount: 0.07, storageStandardAmount: 0.07 })
    expect(summary.body.accounts.find((a: any) => a.accountName === 'bill-bob')).toMatchObject({ totalAmount: 0 })
    expect(summary.body.metadata).toMatchObject({ query: { startTime: '2026-06-01T00:00:00.000Z', endTime: '2026-06-05T00:00:00.000Z', bucketSize: 'day' }, totals: { totalAmount: 0.07 } })
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
    ['/v2/billing?bucketSize=minute', 422, 'query.bucketSize: must be one of "hour", "day", "week", "month", "year", got "minute"'],
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
    ['/v2/billing?startTime=2026-03-02T00:00:00Z&endTime=2026-03-01T00:00:00Z', 400, 'startTime: 2026-03-02T00:00:00Z is not before endTime 2026-03-01T00:00:00Z'],
    ['/v2/billing?startTime=2020-01-01T00:00:00Z&endTime=2026-01-01T00:00:00Z&bucketSize=hour', 400, 'bucketSize: the range'],
    ['/v2/billing/serverless?serverlessId=a&endpointId=b', 400, 'endpointId: "b" differs from serverlessId "a"'],
  ])('refuses %s with %i naming the parameter', async (path, status, line) => {
    const r = await get(path)
    expect(r.status).toBe(status)
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(r.body.errors?.[0] ?? r.body.detail).toContain(line)
  })
})
