import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { lbBody, lbFetch } from './helpers/lb.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

describe('GET /v2/serverless/{id}/metrics', () => {
  it('charts jobs, execution and delay times, cold starts and workers after a workload, and keeps them over a restart', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-endpoint-metrics-'))
    dirs.push(dataDir)
    let s: TestServer = await startTestServer({ metricsFlushMs: 100 }, { dataDir })
    const ep = await createEndpoint(s, endpointBody('hangar/echo:latest'))
    const empty = await s.api('GET', `/v2/serverless/${ep.id}/metrics`)
    expect(empty.status).toBe(200)
    expect(empty.body).toMatchObject({
      window: 'hour',
      intervalSeconds: 60,
      totals: { completed: 0, failed: 0, coldStarts: 0 },
    })
    expect(empty.body.times).toHaveLength(60)

    for (let i = 0; i < 3; i++)
      expect((await jobCall(s, 'POST', `/v2/${ep.id}/runsync`, { input: { i } })).body.status).toBe('COMPLETED')

    const m = (await s.api('GET', `/v2/serverless/${ep.id}/metrics?window=hour`)).body
    const now = m.times.length - 1
    expect(m.totals).toMatchObject({ completed: 3, failed: 0, cancelled: 0, timedOut: 0, coldStarts: 1 })
    expect(m.jobs.completed[now] + (m.jobs.completed[now - 1] ?? 0)).toBe(3)
    expect(m.executionMs.p50.some((v: number | null) => v !== null)).toBe(true)
    expect(m.delayMs.p95.some((v: number | null) => v !== null)).toBe(true)
    expect(m.coldStarts.durationMs.p50.some((v: number | null) => v !== null && v > 0)).toBe(true)

    // The worker is sampled at the next flushes: it shows as running or idle.
    await s.hangar.endpointMetrics.flush()
    const sampled = (await s.api('GET', `/v2/serverless/${ep.id}/metrics`)).body
    expect(sampled.workers.running.concat(sampled.workers.idle).some((v: number) => v > 0)).toBe(true)

    // Another account's key cannot read them; a wrong window is named.
    const other = await s.accountKey('metrics-other')
    expect((await s.api('GET', `/v2/serverless/${ep.id}/metrics`, undefined, other)).status).toBe(404)
    const bad = await s.api('GET', `/v2/serverless/${ep.id}/metrics?window=month`)
    expect(bad.status).toBe(422)
    expect(JSON.stringify(bad.body)).toMatch(/window/)

    // The overview counts the jobs of the last hour.
    const overview = await s.api('GET', '/v2/account/overview')
    expect(overview.status).toBe(200)
    expect(overview.body).toMatchObject({ jobsLastHour: 3, runningPods: 0 })
    expect(overview.body.runningWorkers).toBeGreaterThanOrEqual(0)
    expect(overview.body.spendToday).toBeGreaterThanOrEqual(0)

    // Written on stop, read by the next start.
    await s.stop()
    s = await startTestServer({ metricsFlushMs: 100 }, { dataDir })
    try {
      const again = (await s.api('GET', `/v2/serverless/${ep.id}/metrics?window=day`)).body
      expect(again).toMatchObject({
        window: 'day',
        intervalSeconds: 900,
        totals: { completed: 3, failed: 0, coldStarts: 1 },
      })
      expect(again.times).toHaveLength(96)
      expect((await s.api('GET', `/v2/serverless/${ep.id}/metrics?window=week`)).body.totals.completed).toBe(3)
    } finally {
      await s.stop()
    }
  })

  it('counts load-balancer requests by status class with their latency', async () => {
    const s = await startTestServer({ loadBalancer: { healthIntervalMs: 100, startingHealthIntervalMs: 30 } })
    try {
      const ep = await createEndpoint(s, lbBody())
      expect((await lbFetch(s, ep.id, '/whoami')).status).toBe(200)
      expect((await lbFetch(s, ep.id, '/whoami')).status).toBe(200)
      const missing = await lbFetch(s, ep.id, '/no-such-path')
      expect(missing.status).toBe(404)
      await missing.arrayBuffer()
      const m = (await s.api('GET', `/v2/serverless/${ep.id}/metrics`)).body
      const total = (xs: number[]) => xs.reduce((a, x) => a + x, 0)
      expect(m.totals.requests).toBe(3)
      expect(total(m.requests.status2xx)).toBe(2)
      expect(total(m.requests.status4xx)).toBe(1)
      expect(m.requests.latencyMs.p99.some((v: number | null) => v !== null)).toBe(true)
      expect(m.totals.completed).toBe(0)
    } finally {
      await s.stop()
    }
  })
})
