import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli/main.js'
import { ManualClock } from './helpers/clock.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('hangar billing', () => {
  let s: TestServer
  const clock = new ManualClock()
  beforeAll(async () => {
    clock.set(Date.parse('2026-03-02T00:00:00Z'))
    s = await startTestServer({}, { clock })
    await s.api('POST', '/v2/network-volumes', { name: 'v', size: 100, dataCenter: 'LOCAL-1' })
    clock.advance(73 * 3_600_000)
    await s.hangar.meter.flush()
  })
  afterAll(() => s.stop())

  /** Runs the CLI in this process against the test server; returns its exit code and output. */
  async function hangar(...args: string[]): Promise<{ code: number; out: string }> {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    const log = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      const code = await main([...args, '--url', s.url, '--api-key', s.adminKey])
      return { code, out: [...out.mock.calls, ...err.mock.calls, ...log.mock.calls].map((c) => String(c[0])).join('') }
    } finally {
      out.mockRestore()
      err.mockRestore()
      log.mockRestore()
    }
  }

  it('prints a table of buckets and totals, and the API response with --json', async () => {
    // 100 GB STANDARD x 0.07 USD per GB-month x 73 h / 730 h = 0.70, all on one week (from Monday 2026-03-02).
    const table = await hangar(
      'billing',
      'network-volumes',
      '--bucket-size',
      'week',
      '--start-time',
      '2026-03-02T00:00:00Z',
      '--end-time',
      '2026-03-09T00:00:00Z',
    )
    expect(table.code).toBe(0)
    expect(table.out).toMatch(
      /^week buckets from 2026-03-02T00:00:00.000Z to 2026-03-09T00:00:00.000Z\nBUCKET\s+NETWORKVOLUMEID\s+TOTAL\s+STANDARD\s+HIGHPERFORMANCE\n2026-03-02\s+vol_\w+\s+\$0\.70\s+\$0\.70\s+\$0\.00\n\ntotalAmount:\s+\$0\.70\nstandardAmount:\s+\$0\.70\n$/,
    )
    // The current week (from Monday 2026-03-02) and the one before.
    const json = await hangar('billing', 'summary', '--bucket-size', 'week', '--last-n', '2', '--json')
    expect(json.code).toBe(0)
    const body = JSON.parse(json.out)
    expect(body.records).toHaveLength(2)
    expect(body.metadata.totals).toMatchObject({ totalAmount: 0.7, storageStandardAmount: 0.7 })
  })

  it('passes the spec flags through and exits 6 naming a rejected parameter', async () => {
    const ok = await hangar(
      'billing',
      'serverless',
      '--grouping',
      'podId',
      '--endpoint-id',
      'ep1',
      '--gpu-id',
      'NVIDIA L4',
      '--pod-id',
      'w1',
      '--json',
    )
    expect(ok.code).toBe(0)
    expect(JSON.parse(ok.out).metadata.query).toMatchObject({
      grouping: 'podId',
      serverlessId: 'ep1',
      podId: 'w1',
      gpuId: 'NVIDIA L4',
    })
    const pods = await hangar('billing', 'pods', '--grouping', 'podId', '--json')
    expect(JSON.parse(pods.out).metadata.query.grouping).toBe('podId')
    const bad = await hangar('billing', 'summary', '--last-n', '2', '--start-time', '2026-03-01T00:00:00Z')
    expect(bad.code).toBe(6)
    expect(bad.out).toContain('lastN: cannot be combined with startTime')
    expect((await hangar('billing', 'pods', '--bucket-size', 'fortnight')).code).toBe(2)
  })
})
