import { Pool } from 'undici'
import {
  accountKey,
  createQueueEndpoint,
  jobServerConfig,
  percentile,
  round,
  rssMb,
  startServer,
  submitJobs,
  waitReady,
  type BenchContext,
  type BenchServer,
  type Row,
} from '../lib.js'

const CONNECTIONS = 64
const IN_FLIGHT = 256
/** The full run stops submitting after this long and reports how far it got. */
const SUBMIT_BUDGET_MS = 12 * 60_000

/**
 * Workload 7: jobs submitted and retained at scale. Everything stays queued: the endpoint's one worker
 * (bench/idle) calls in and sends heartbeats but never takes a job. (An endpoint with workers.max 0 would
 * do too, but without a running worker its /run limit is the spec's base 1,000 per 10 s; one running worker
 * lifts it to the per-worker allowance.) Reports the control plane's RSS, /status latency with few and
 * with many jobs, the submission rate, and how long purge-queue takes to remove them all.
 */
export async function scale(ctx: BenchContext): Promise<Row[]> {
  const total = Number(process.env.HANGAR_BENCH_SCALE_JOBS) || (ctx.quick ? 20_000 : 1_000_000)
  const s = await startServer(jobServerConfig())
  const w = '7 scale'
  try {
    const key = await accountKey(s, 'bench', true)
    const ep = await createQueueEndpoint(s, key, 'bench/idle:latest', { workers: { min: 1, max: 1, idleTimeout: 60 } })
    await waitReady(s, key, ep, 1)
    const rssStart = rssMb(s.child.pid!)

    const first = await submitJobs(s, key, ep, 1_000, { connections: CONNECTIONS, inFlight: IN_FLIGHT, keepIdEvery: 1 })
    if (first.failed) throw new Error(`submissions refused: ${first.firstError}`)
    await statusLatency(s, key, ep, first.ids, 2_000) // warm-up (JIT), not measured
    const small = await statusLatency(s, key, ep, first.ids, ctx.quick ? 2_000 : 10_000)

    let peak = rssMb(s.child.pid!)
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(s.child.pid!))), 1_000)
    let rest
    try {
      rest = await submitJobs(s, key, ep, total - 1_000, {
        connections: CONNECTIONS,
        inFlight: IN_FLIGHT,
        keepIdEvery: 97,
        deadline: Date.now() + SUBMIT_BUDGET_MS,
      })
    } finally {
      clearInterval(sampler)
    }
    if (rest.failed) throw new Error(`${rest.failed} submissions refused: ${rest.firstError}`)
    const retained = 1_000 + rest.submitted
    const rssFull = rssMb(s.child.pid!)
    peak = Math.max(peak, rssFull)
    const large = await statusLatency(s, key, ep, [...first.ids, ...rest.ids], ctx.quick ? 2_000 : 10_000)

    const t0 = performance.now()
    const purge = await s.api('POST', `/v2/${ep}/purge-queue`, undefined, key)
    const purgeMs = performance.now() - t0
    if (purge.status !== 200) throw new Error(`purge-queue: ${purge.status} ${JSON.stringify(purge.body)}`)
    const rssAfter = rssMb(s.child.pid!)
    peak = Math.max(peak, rssAfter)
    const ratio = large.p99 / small.p99
    const short = retained < total ? `; stopped after ${SUBMIT_BUDGET_MS / 60_000} min at ${retained} of ${total}` : ''
    return [
      {
        workload: w,
        metric: 'jobs submitted and retained',
        value: retained,
        unit: 'jobs',
        note: `all queued (one idle worker that never takes)${short}`,
      },
      {
        workload: w,
        metric: 'submit rate',
        value: round((rest.submitted / rest.ms) * 1000),
        unit: 'jobs/s',
        note: `${CONNECTIONS} keep-alive connections, ${IN_FLIGHT} in flight`,
      },
      {
        workload: w,
        metric: 'control-plane RSS',
        value: peak,
        unit: 'MB',
        goal: '<= 500 MB',
        met: peak <= 500,
        note: `peak (sampled each second while submitting, and after the purge); ${rssStart} MB before, ${rssFull} MB with all retained, ${rssAfter} MB after the purge`,
      },
      { workload: w, metric: '/status p99 at 1k jobs', value: small.p99, unit: 'ms', note: `p50 ${small.p50} ms` },
      {
        workload: w,
        metric: `/status p99 at ${retained} jobs`,
        value: large.p99,
        unit: 'ms',
        goal: '<= 2x the 1k p99',
        met: ratio <= 2,
        note: `p50 ${large.p50} ms; ${round(ratio, 2)}x`,
      },
      {
        workload: w,
        metric: 'purge-queue',
        value: round(purgeMs),
        unit: 'ms',
        note: `${purge.body.removed} jobs removed`,
      },
    ]
  } finally {
    await s.stop()
  }
}

/** p50/p99 (ms, client side) of GET /status over random ids of `ids`, 8 requests in flight. */
async function statusLatency(
  s: BenchServer,
  key: string,
  ep: string,
  ids: string[],
  requests: number,
): Promise<{ p50: number; p99: number }> {
  const pool = new Pool(s.url, { connections: 8 })
  const headers = { authorization: `Bearer ${key}` }
  const lat: number[] = []
  let left = requests
  const lane = async () => {
    while (left-- > 0) {
      const id = ids[Math.floor(Math.random() * ids.length)]
      const t0 = performance.now()
      const res = await pool.request({ path: `/v2/${ep}/status/${id}`, method: 'GET', headers })
      await res.body.dump()
      if (res.statusCode !== 200) throw new Error(`/status answered ${res.statusCode}`)
      lat.push(performance.now() - t0)
    }
  }
  try {
    await Promise.all(Array.from({ length: 8 }, lane))
  } finally {
    await pool.close()
  }
  lat.sort((a, b) => a - b)
  return { p50: round(percentile(lat, 50), 2), p99: round(percentile(lat, 99), 2) }
}
