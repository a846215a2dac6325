import { Pool } from 'undici'
import { accountKey, createQueueEndpoint, jobServerConfig, percentile, round, startServer, waitReady, type BenchContext, type Row } from '../lib.js'

/**
 * Workload 3: sequential /runsync round trips against one warm, idle worker (no-op handler, TypeScript
 * SDK): what the platform adds to a job that does nothing (submit, hand-off to the waiting job-take,
 * result, wake-up of the waiting /runsync), over one keep-alive connection.
 */
export async function runsyncLatency(ctx: BenchContext): Promise<Row[]> {
  const n = ctx.quick ? 300 : 3_000
  const s = await startServer(jobServerConfig())
  const w = '3 sequential /runsync'
  try {
    const key = await accountKey(s, 'bench', true)
    const ep = await createQueueEndpoint(s, key, 'bench/noop:latest', { workers: { min: 1, max: 1, idleTimeout: 60 } })
    await waitReady(s, key, ep, 1)
    const pool = new Pool(s.url, { connections: 1 })
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const body = JSON.stringify({ input: { n: 1 } })
    const lat: number[] = []
    try {
      for (let i = 0; i < n + 50; i++) {
        const t0 = performance.now()
        const res = await pool.request({ path: `/v2/${ep}/runsync`, method: 'POST', headers, body })
        const out = (await res.body.json()) as { status: string }
        if (res.statusCode !== 200 || out.status !== 'COMPLETED') throw new Error(`/runsync: ${res.statusCode} ${JSON.stringify(out)}`)
        // The first 50 warm up (JIT, connections).
        if (i >= 50) lat.push(performance.now() - t0)
      }
    } finally {
      await pool.close()
    }
    lat.sort((a, b) => a - b)
    const p50 = round(percentile(lat, 50), 2)
    const p99 = round(percentile(lat, 99), 2)
    return [
      { workload: w, metric: 'round trip p50', value: p50, unit: 'ms', goal: '<= 1.5 ms', met: p50 <= 1.5, note: `${n} jobs, one warm worker, one keep-alive connection` },
      { workload: w, metric: 'round trip p99', value: p99, unit: 'ms', goal: '<= 5 ms', met: p99 <= 5, note: `p90 ${round(percentile(lat, 90), 2)} ms, p95 ${round(percentile(lat, 95), 2)} ms, max ${round(lat[lat.length - 1], 1)} ms` },
    ]
  } finally {
    await s.stop()
  }
}
