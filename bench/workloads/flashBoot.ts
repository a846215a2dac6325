import { Pool } from 'undici'
import {
  accountKey,
  createQueueEndpoint,
  jobServerConfig,
  round,
  startServer,
  until,
  waitReady,
  type BenchContext,
  type BenchServer,
  type Row,
} from '../lib.js'
import { median } from './coldStart.js'

/**
 * Workload 5: FlashBoot. An endpoint with flashboot FLASHBOOT and idleTimeout 1 s runs a job (cold), its
 * worker is scaled down (parked, process kept) after the idle timeout, and the next /runsync is timed.
 * Reports "not measured" when the control plane does not park workers (no PARKED worker appears). The floor: the
 * same /runsync to a worker of the same image that was never parked (min 1), after the same idle time with the
 * same polling, so that what waking idle processes costs on this machine weighs on both.
 */
export async function flashBoot(ctx: BenchContext): Promise<Row[]> {
  const runs = ctx.quick ? 2 : 7
  const s = await startServer(jobServerConfig())
  const w = '5 FlashBoot start'
  try {
    const key = await accountKey(s, 'bench', true)
    const ep = await createQueueEndpoint(s, key, 'hangar/echo:latest', {
      flashboot: 'FLASHBOOT',
      workers: { min: 0, max: 1, idleTimeout: 1 },
    })
    const warm = await createQueueEndpoint(s, key, 'hangar/echo:latest', {
      workers: { min: 1, max: 1, idleTimeout: 60 },
    })
    await waitReady(s, key, warm, 1)
    // The timed requests go over one keep-alive undici connection, as in workload 3: fetch() alone took
    // about 4 ms per request on the 2-core machine, more than the platform's part.
    const pool = new Pool(s.url, { connections: 1 })
    const times: number[] = []
    const floor: number[] = []
    try {
      await runsync(pool, key, ep, -1)
      await runsync(pool, key, warm, -1)
      for (let i = 0; i < runs; i++) {
        const idleFrom = performance.now()
        if (!(await parked(s, key, ep)))
          return [
            {
              workload: w,
              metric: 'first /runsync after scale-down',
              value: NaN,
              unit: 'ms',
              goal: '<= 5 ms',
              note: 'not measured: no worker was parked (FlashBoot) within 15 s of going idle',
            },
          ]
        const idleMs = performance.now() - idleFrom
        times.push(await runsync(pool, key, ep, i))
        await idle(s, key, warm, idleMs)
        floor.push(await runsync(pool, key, warm, i))
      }
    } finally {
      await pool.close()
    }
    const med = round(median(times), 1)
    const floorMed = round(median(floor), 1)
    return [
      {
        workload: w,
        metric: 'first /runsync after scale-down',
        value: med,
        unit: 'ms',
        goal: '<= 5 ms',
        met: med <= 5,
        note: `median of ${runs} (each after the worker was parked by the 1 s idle timeout); all: ${times.map((t) => round(t, 1)).join(', ')} ms`,
      },
      {
        workload: w,
        metric: 'floor: /runsync to a never-parked worker after the same idle time',
        value: floorMed,
        unit: 'ms',
        note: `median of ${runs}, same image, taking turns with the row above; all: ${floor.map((t) => round(t, 1)).join(', ')} ms`,
      },
      {
        workload: w,
        metric: 'FlashBoot /runsync / never-parked floor',
        value: round(median(times) / median(floor), 2),
        unit: 'x',
        note: 'what taking a parked worker back adds to the same job',
      },
    ]
  } finally {
    await s.stop()
  }
}

async function runsync(pool: Pool, key: string, ep: string, i: number): Promise<number> {
  const t0 = performance.now()
  const res = await pool.request({
    path: `/v2/${ep}/runsync`,
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ input: { i } }),
  })
  const out = (await res.body.json()) as { status?: string }
  const ms = performance.now() - t0
  if (res.statusCode !== 200 || out.status !== 'COMPLETED')
    throw new Error(`/runsync: ${res.statusCode} ${JSON.stringify(out)}`)
  return ms
}

/** Leaves `endpointId` idle for `ms`, polling its workers as `parked` does meanwhile. */
async function idle(s: BenchServer, key: string, endpointId: string, ms: number): Promise<void> {
  const end = performance.now() + ms
  while (performance.now() < end) {
    await s.api('GET', `/v2/serverless/${endpointId}/workers`, undefined, key)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Waits until the endpoint's worker is parked; false when none is within 15 s. */
async function parked(s: BenchServer, key: string, ep: string): Promise<boolean> {
  try {
    await until(
      'a parked worker',
      async () =>
        ((await s.api('GET', `/v2/serverless/${ep}/workers`, undefined, key)).body?.summary?.parked ?? 0) >= 1,
      15_000,
      50,
    )
    return true
  } catch {
    return false
  }
}
