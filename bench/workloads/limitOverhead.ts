import { MemoryCounterStore } from '../../src/ratelimit/MemoryCounterStore.js'
import { RateLimiter } from '../../src/ratelimit/RateLimiter.js'
import { accountKey, cpuMs, load, startServer, type BenchContext, type Row } from '../lib.js'

/**
 * Workload 8: what authentication and rate limiting cost per request. Measured two ways: the same GET
 * through the server with and without quota accounting (an exempt account skips it), and the limiter's
 * own cost per call in-process, set against the cost of a whole request.
 */
export async function limitOverhead(ctx: BenchContext): Promise<Row[]> {
  const seconds = ctx.quick ? 2 : 10
  const s = await startServer({ rateLimits: { management: { minute: 1e9, hour: 1e9, day: 1e9 } } })
  let limited, exempt
  try {
    const limitedKey = await accountKey(s, 'limited')
    const exemptKey = await accountKey(s, 'exempt', true)
    const url = `${s.url}/v2/catalog/cpus/cpu3c`
    // Server CPU per request as well as req/s: the client (autocannon) shares the cores, so req/s also
    // moves with what the client pays for the extra headers, and with whatever else runs.
    const measured = async (key: string) => {
      const c0 = cpuMs(s.child.pid!)
      const r = await load({ url, headers: { authorization: `Bearer ${key}` }, connections: 16, seconds })
      return { ...r, cpuUs: ((cpuMs(s.child.pid!) - c0) * 1000) / r.total }
    }
    await load({ url, headers: { authorization: `Bearer ${exemptKey}` }, connections: 16, seconds: 1 }) // warm-up
    await load({ url, headers: { authorization: `Bearer ${limitedKey}` }, connections: 16, seconds: 1 })
    exempt = await measured(exemptKey)
    limited = await measured(limitedKey)
  } finally {
    await s.stop()
  }
  const limiter = new RateLimiter({ counters: new MemoryCounterStore(), clock: { now: () => Date.now() }, quotas: { minute: 1e9, hour: 1e9, day: 1e9 }, perWorker: { rate: 500, concurrent: 100 }, runningWorkers: () => 0 })
  const n = ctx.quick ? 20_000 : 200_000
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await limiter.quota(`acc-${i % 100}`)
  const quotaNs = Number(process.hrtime.bigint() - t0) / n
  const requestNs = 1e9 / exempt.rps
  const viaServer = (1 - limited.rps / exempt.rps) * 100
  const cpuCost = (limited.cpuUs / exempt.cpuUs - 1) * 100
  return [
    { workload: '8 limit overhead', metric: 'req/s exempt (auth only)', value: Math.round(exempt.rps), unit: 'req/s', note: `server CPU ${Math.round(exempt.cpuUs)} µs per request` },
    { workload: '8 limit overhead', metric: 'req/s with quota accounting', value: Math.round(limited.rps), unit: 'req/s', note: `server CPU ${Math.round(limited.cpuUs)} µs per request` },
    { workload: '8 limit overhead', metric: 'server CPU cost of quotas per request', value: Math.round(cpuCost * 10) / 10, unit: '%', goal: '<= 5 %', met: cpuCost <= 5, note: `throughput cost ${Math.round(viaServer * 10) / 10} % (client and server share the cores)` },
    { workload: '8 limit overhead', metric: 'limiter.quota() per call', value: Math.round(quotaNs), unit: 'ns', note: `${((quotaNs / requestNs) * 100).toFixed(1)} % of one request's server time` },
  ]
}
