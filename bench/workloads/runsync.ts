import { Pool } from 'undici'
import { accountKey, createQueueEndpoint, jobServerConfig, percentile, round, startBareFastify, startServer, waitReady, type BenchContext, type Row } from '../lib.js'

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
    const floor = await bareRoundTrip(n, headers, body)
    return [
      { workload: w, metric: 'round trip p50', value: p50, unit: 'ms', goal: '<= 0.8 ms', met: p50 <= 0.8, note: `${n} jobs, one warm worker, one keep-alive connection` },
      { workload: w, metric: 'round trip p99', value: p99, unit: 'ms', goal: '<= 3 ms', met: p99 <= 3, note: `p90 ${round(percentile(lat, 90), 2)} ms, p95 ${round(percentile(lat, 95), 2)} ms, max ${round(lat[lat.length - 1], 1)} ms` },
      {
        workload: w,
        metric: 'floor: one bare Fastify POST round trip p50',
        value: floor.p50,
        unit: 'ms',
        note: `p99 ${floor.p99} ms; same client and connection, a route answering at once; a /runsync is three such exchanges in a row (the submission, the hand-off to the waiting job-take, the result)`,
      },
    ]
  } finally {
    await s.stop()
  }
}

/** Sequential POSTs to a bare Fastify route that answers at once: one HTTP exchange on this machine. */
async function bareRoundTrip(n: number, headers: Record<string, string>, body: string): Promise<{ p50: number; p99: number }> {
  const bare = await startBareFastify(`f.post('/x', async () => ({ id: 'x', status: 'COMPLETED' }))`)
  const pool = new Pool(bare.url, { connections: 1 })
  try {
    const lat: number[] = []
    for (let i = 0; i < n + 50; i++) {
      const t0 = performance.now()
      const res = await pool.request({ path: '/x', method: 'POST', headers, body })
      await res.body.json()
      if (i >= 50) lat.push(performance.now() - t0)
    }
    lat.sort((a, b) => a - b)
    return { p50: round(percentile(lat, 50), 2), p99: round(percentile(lat, 99), 2) }
  } finally {
    await pool.close()
    bare.stop()
  }
}
