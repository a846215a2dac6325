import { accountKey, createQueueEndpoint, jobServerConfig, round, startServer, until, type BenchContext, type BenchServer, type Row } from '../lib.js'
import { median } from './coldStart.js'

/**
 * Workload 5: FlashBoot. An endpoint with flashboot FLASHBOOT and idleTimeout 1 s runs a job (cold), its
 * worker is scaled down (parked, process kept) after the idle timeout, and the next /runsync is timed.
 * Reports "not measured" when the control plane does not park workers (no PARKED worker appears).
 */
export async function flashBoot(ctx: BenchContext): Promise<Row[]> {
  const runs = ctx.quick ? 2 : 7
  const s = await startServer(jobServerConfig())
  const w = '5 FlashBoot start'
  try {
    const key = await accountKey(s, 'bench', true)
    const ep = await createQueueEndpoint(s, key, 'hangar/echo:latest', { flashboot: 'FLASHBOOT', workers: { min: 0, max: 1, idleTimeout: 1 } })
    await runsync(s, key, ep, -1)
    const times: number[] = []
    for (let i = 0; i < runs; i++) {
      if (!(await parked(s, key, ep))) return [{ workload: w, metric: 'first /runsync after scale-down', value: NaN, unit: 'ms', goal: '<= 20 ms', note: 'not measured: no worker was parked (FlashBoot) within 15 s of going idle' }]
      times.push(await runsync(s, key, ep, i))
    }
    const med = round(median(times), 1)
    return [{ workload: w, metric: 'first /runsync after scale-down', value: med, unit: 'ms', goal: '<= 20 ms', met: med <= 20, note: `median of ${runs} (each after the worker was parked by the 1 s idle timeout); all: ${times.map((t) => round(t, 1)).join(', ')} ms` }]
  } finally {
    await s.stop()
  }
}

async function runsync(s: BenchServer, key: string, ep: string, i: number): Promise<number> {
  const t0 = performance.now()
  const r = await s.api('POST', `/v2/${ep}/runsync`, { input: { i } }, key)
  const ms = performance.now() - t0
  if (r.status !== 200 || r.body.status !== 'COMPLETED') throw new Error(`/runsync: ${r.status} ${JSON.stringify(r.body)}`)
  return ms
}

/** Waits until the endpoint's worker is parked; false when none is within 15 s. */
async function parked(s: BenchServer, key: string, ep: string): Promise<boolean> {
  try {
    await until('a parked worker', async () => ((await s.api('GET', `/v2/serverless/${ep}/workers`, undefined, key)).body?.summary?.parked ?? 0) >= 1, 15_000, 50)
    return true
  } catch {
    return false
  }
}
