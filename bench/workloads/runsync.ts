import { Pool } from 'undici'
import {
  accountKey,
  createQueueEndpoint,
  jobServerConfig,
  percentile,
  round,
  startBareFastify,
  startServer,
  waitReady,
  type BenchContext,
  type Row,
} from '../lib.js'

/** Round trips of one kind in a row, before the other kind takes its turn (see runsyncLatency). */
const BLOCK = 100

/**
 * Workload 3: sequential /runsync round trips against one warm, idle worker (no-op handler, TypeScript
 * SDK): what the platform adds to a job that does nothing (submit, hand-off to the waiting job-take,
 * result, wake-up of the waiting /runsync), over one keep-alive connection. Beside it, the floor: POSTs to a
 * bare Fastify route, by the same client, taking turns with the /runsync ones in blocks of BLOCK, so that
 * load from other programs, which comes and goes, weighs on both alike and their ratio holds still.
 */
export async function runsyncLatency(ctx: BenchContext): Promise<Row[]> {
  const n = ctx.quick ? 300 : 3_000
  const s = await startServer(jobServerConfig())
  const bare = await startBareFastify(`f.post('/x', async () => ({ id: 'x', status: 'COMPLETED' }))`)
  const w = '3 sequential /runsync'
  try {
    const key = await accountKey(s, 'bench', true)
    const ep = await createQueueEndpoint(s, key, 'bench/noop:latest', { workers: { min: 1, max: 1, idleTimeout: 60 } })
    await waitReady(s, key, ep, 1)
    const pool = new Pool(s.url, { connections: 1 })
    const barePool = new Pool(bare.url, { connections: 1 })
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const body = JSON.stringify({ input: { n: 1 } })
    const runsync = async () => {
      const res = await pool.request({ path: `/v2/${ep}/runsync`, method: 'POST', headers, body })
      const out = (await res.body.json()) as { status: string }
      if (res.statusCode !== 200 || out.status !== 'COMPLETED')
        throw new Error(`/runsync: ${res.statusCode} ${JSON.stringify(out)}`)
    }
    const bareCall = async () => {
      const res = await barePool.request({ path: '/x', method: 'POST', headers, body })
      await res.body.json()
    }
    const lat: number[] = []
    const floor: number[] = []
    try {
      // The first 50 of each warm up (JIT, connections).
      for (let i = 0; i < 50; i++) await runsync()
      for (let i = 0; i < 50; i++) await bareCall()
      for (let done = 0; done < n; done += BLOCK) {
        for (const [call, into] of [
          [runsync, lat],
          [bareCall, floor],
        ] as const) {
          for (let i = 0; i < Math.min(BLOCK, n - done); i++) {
            const t0 = performance.now()
            await call()
            into.push(performance.now() - t0)
          }
        }
      }
    } finally {
      await pool.close()
      await barePool.close()
    }
    lat.sort((a, b) => a - b)
    floor.sort((a, b) => a - b)
    const p50 = round(percentile(lat, 50), 2)
    const p99 = round(percentile(lat, 99), 2)
    const ratio = round(percentile(lat, 50) / percentile(floor, 50), 2)
    return [
      {
        workload: w,
        metric: 'round trip p50',
        value: p50,
        unit: 'ms',
        goal: '<= 0.8 ms',
        met: p50 <= 0.8,
        note: `${n} jobs, one warm worker, one keep-alive connection`,
      },
      {
        workload: w,
        metric: 'round trip p50 / bare Fastify round trip p50',
        value: ratio,
        unit: 'x',
        goal: '<= 3.5 x',
        met: ratio <= 3.5,
        note: `both measured in this run, taking turns in blocks of ${BLOCK}; a /runsync is three HTTP exchanges (submission, the waiting job-take's answer, the result)`,
      },
      {
        workload: w,
        metric: 'round trip p99',
        value: p99,
        unit: 'ms',
        goal: '<= 3 ms',
        met: p99 <= 3,
        note: `p90 ${round(percentile(lat, 90), 2)} ms, p95 ${round(percentile(lat, 95), 2)} ms, max ${round(lat[lat.length - 1], 1)} ms`,
      },
      {
        workload: w,
        metric: 'floor: one bare Fastify POST round trip p50',
        value: round(percentile(floor, 50), 2),
        unit: 'ms',
        note: `p99 ${round(percentile(floor, 99), 2)} ms; same client, a connection of its own, a route answering at once`,
      },
    ]
  } finally {
    bare.stop()
    await s.stop()
  }
}
