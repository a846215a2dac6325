import { join } from 'node:path'
import { Pool } from 'undici'
import { FleetServer, type ControlPlaneStats } from '../fleet/FleetServer.js'
import { percentile, round, sleep, until, type BenchContext, type Row } from '../lib.js'

/**
 * Workload `fleet` (issue 35): a GPU fleet on one control plane, by simulation. Hangar runs in a process of
 * its own with the simulated runtime (bench/fleet/serve.ts); its workers are virtual ones in this process,
 * speaking the Python SDK's protocol (bench/fleet/VirtualWorkers.ts) on virtual hosts of 8 GPUs. Three
 * scenarios, each on a fresh control plane:
 * - idle: warm workers on many endpoints, nothing queued: what keeping them costs the leader;
 * - burst: jobs across many endpoints from zero workers: time to N running workers, job-take latency,
 *   scaling pass time, drain time, each job run exactly once;
 * - churn: 10 % of the workers lost per minute while jobs run: every job completes, lost ones are replaced.
 * Sizes are the issue's in a full run, a tenth or less with --quick (CI's smoke run). HANGAR_BENCH_FLEET_SCALE
 * multiplies the full sizes (0.2 = a fifth), HANGAR_BENCH_FLEET_PROF=<dir> writes a CPU profile of each
 * control plane there, HANGAR_BENCH_FLEET_ONLY=idle,burst,churn runs only those.
 */
export async function fleet(ctx: BenchContext): Promise<Row[]> {
  const scale = Number(process.env.HANGAR_BENCH_FLEET_SCALE) || 1
  const n = (full: number) => Math.max(1, Math.round(full * scale))
  // The quick run (CI's smoke run, under 90 s on 2 cores with the control planes' start-ups) is a check
  // that the scenarios work, not a measurement.
  const sizes = ctx.quick
    ? {
        idle: { endpoints: 30, workers: 300 },
        burst: { endpoints: 20, jobs: 1_000 },
        churn: { endpoints: 6, workers: 60 },
      }
    : {
        idle: { endpoints: n(500), workers: n(5_000) },
        burst: { endpoints: n(500), jobs: n(50_000) },
        churn: { endpoints: n(100), workers: n(1_000) },
      }
  const only = process.env.HANGAR_BENCH_FLEET_ONLY?.split(',')
  const rows: Row[] = []
  if (!only || only.includes('idle')) rows.push(...(await idle(ctx, sizes.idle)))
  const target = Math.min(1_000, sizes.burst.endpoints * 10)
  if (!only || only.includes('burst')) rows.push(...(await burst(ctx, { ...sizes.burst, perEndpoint: 10, target })))
  if (!only || only.includes('churn')) rows.push(...(await churn(ctx, sizes.churn)))
  return rows
}

const GPU_ENDPOINT = (name: string, workers: { min: number; max: number }) => ({
  name,
  type: 'QUEUE',
  image: 'sim/worker:latest',
  gpu: { pools: ['ADA_24'] },
  scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
  workers: { ...workers, idleTimeout: 60 },
})

function profileArgs(name: string): string[] {
  const dir = process.env.HANGAR_BENCH_FLEET_PROF
  // No fixed file name: tsx's loader thread writes a profile of its own, which would overwrite the main one.
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, name)}`] : []
}

async function setUp(s: FleetServer, endpoints: number, workers: { min: number; max: number }) {
  await s.api('POST', '/v2/admin/accounts', { name: 'fleet', rateLimitExempt: true })
  const key = (await s.api('POST', '/v2/admin/keys', { account: 'fleet', permission: 'ALL' })).body.key as string
  const ids: string[] = []
  for (let i = 0; i < endpoints; i++) {
    const r = await s.api('POST', '/v2/serverless', GPU_ENDPOINT(`fleet-${i}`, workers), key)
    if (r.status !== 201) throw new Error(`create endpoint: ${r.status} ${JSON.stringify(r.body)}`)
    ids.push(r.body.id)
  }
  return { key, ids }
}

function statRows(w: string, st: ControlPlaneStats, note: string): Row[] {
  return [
    {
      workload: w,
      metric: 'control-plane CPU',
      value: round(st.cores, 3),
      unit: 'cores',
      note: `${note}; over ${round(st.seconds)} s`,
    },
    { workload: w, metric: 'control-plane RSS', value: round(st.rssMb), unit: 'MiB' },
    {
      workload: w,
      metric: 'event-loop lag p99',
      value: round(st.lagP99Ms, 1),
      unit: 'ms',
      note: `max ${round(st.lagMaxMs)} ms`,
    },
    { workload: w, metric: 'store statements', value: round(st.statementsPerS), unit: '/s' },
    {
      workload: w,
      metric: 'scaling pass p99',
      value: round(st.passP99Ms, 1),
      unit: 'ms',
      note: `${st.passes} passes, p50 ${round(st.passP50Ms, 1)} ms, max ${round(st.passMaxMs)} ms`,
    },
  ]
}

/** Idle fleet: `workers` warm workers on `endpoints` endpoints (min = max), nothing queued. */
async function idle(ctx: BenchContext, o: { endpoints: number; workers: number }): Promise<Row[]> {
  const w = `fleet idle ${o.workers}w/${o.endpoints}ep`
  const per = Math.ceil(o.workers / o.endpoints)
  const s = await FleetServer.start({
    hosts: Math.ceil((per * o.endpoints) / 8),
    workers: { jobMs: 1000 },
    nodeArgs: profileArgs('idle'),
  })
  try {
    const t0 = performance.now()
    await setUp(s, o.endpoints, { min: per, max: per })
    await until(`${per * o.endpoints} virtual workers`, () => s.workers.size >= per * o.endpoints, 600_000, 200)
    const warmMs = performance.now() - t0
    // Every worker has pinged and holds its take; the start-up's work is over.
    await sleep(ctx.quick ? 2_000 : 15_000)
    s.resetStats()
    await sleep(ctx.quick ? 5_000 : 60_000)
    const st = await s.stats()
    const pingsPerS = per * o.endpoints * (1000 / 10_000)
    return [
      {
        workload: w,
        metric: 'time to all warm',
        value: round(warmMs / 1000, 1),
        unit: 's',
        note: 'endpoints created one by one, then every worker started and called in',
      },
      ...statRows(w, st, `~${round(pingsPerS)} pings/s, ${per * o.endpoints} held job-takes and job-stops`).map((r) =>
        r.metric === 'control-plane CPU'
          ? {
              ...r,
              goal: o.workers >= 5_000 ? '< 0.25 core' : undefined,
              met: o.workers >= 5_000 ? r.value < 0.25 : undefined,
            }
          : r,
      ),
    ]
  } finally {
    await s.stop()
  }
}

/** Burst: `jobs` jobs across `endpoints` endpoints from zero workers (max `perEndpoint` each), jobs of 1 s (0.2 s quick). */
async function burst(
  ctx: BenchContext,
  o: { endpoints: number; jobs: number; perEndpoint: number; target: number },
): Promise<Row[]> {
  const w = `fleet burst ${o.jobs}j/${o.endpoints}ep`
  const jobMs = ctx.quick ? 200 : 1000
  const s = await FleetServer.start({
    hosts: Math.ceil((o.endpoints * o.perEndpoint) / 8),
    workers: { jobMs },
    nodeArgs: profileArgs('burst'),
  })
  try {
    const { key, ids } = await setUp(s, o.endpoints, { min: 0, max: o.perEndpoint })
    await sleep(1_000)
    s.resetStats()
    const t0 = performance.now()
    let toTarget = Number.NaN
    let peak = 0
    const sampler = setInterval(() => {
      peak = Math.max(peak, s.workers.size)
      if (Number.isNaN(toTarget) && s.workers.size >= o.target) toTarget = performance.now() - t0
    }, 50)
    const pool = new Pool(s.url, { connections: 32 })
    let next = 0
    let refused = 0
    let firstError = ''
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const lane = async () => {
      while (next < o.jobs) {
        const i = next++
        const res = await pool.request({
          path: `/v2/${ids[i % ids.length]}/run`,
          method: 'POST',
          headers,
          body: JSON.stringify({ input: { i } }),
        })
        const text = await res.body.text()
        if (res.statusCode !== 200) {
          refused++
          firstError ||= `${res.statusCode} ${text.slice(0, 200)}`
        }
      }
    }
    let submitMs = 0
    try {
      await Promise.all(Array.from({ length: 128 }, lane))
      submitMs = performance.now() - t0
      await until(
        `${o.jobs} jobs done`,
        () => s.workers.stats.dones >= o.jobs - refused,
        ctx.quick ? 120_000 : 1_200_000,
        100,
      )
    } finally {
      clearInterval(sampler)
      await pool.close()
    }
    const drainMs = performance.now() - t0
    const st = await s.stats()
    const dup = s.workers.duplicates()
    const takes = [...s.workers.stats.takeMsWithJob].sort((a, b) => a - b)
    const doneMs = [...s.workers.stats.doneMs].sort((a, b) => a - b)
    const once = dup.twice.length === 0 && dup.taken === o.jobs - refused && refused === 0
    return [
      {
        workload: w,
        metric: `time to ${o.target} running workers`,
        value: round(toTarget / 1000, 1),
        unit: 's',
        goal: o.target >= 1_000 ? '< 60 s' : undefined,
        met: o.target >= 1_000 ? toTarget < 60_000 : undefined,
        note: `from the first submission; peak ${peak} workers, ${st.startsBegun} starts`,
      },
      {
        workload: w,
        metric: 'job-take with a job p50',
        value: round(percentile(takes, 50), 1),
        unit: 'ms',
        note: `p99 ${round(percentile(takes, 99), 1)} ms (request to answer, as the worker sees it); job-done p50 ${round(percentile(doneMs, 50), 1)} ms, p99 ${round(percentile(doneMs, 99), 1)} ms`,
      },
      {
        workload: w,
        metric: 'queue drained',
        value: round(drainMs / 1000, 1),
        unit: 's',
        note: `jobs of ${jobMs} ms, and a worker asks again up to 1 s after each (the SDK looks each second while busy); submitted in ${round(submitMs / 1000, 1)} s (${round((o.jobs / submitMs) * 1000)} jobs/s); ${round((o.jobs / drainMs) * 1000)} jobs/s end to end`,
      },
      {
        workload: w,
        metric: 'jobs run exactly once',
        value: dup.taken - dup.twice.length,
        unit: 'jobs',
        goal: `${o.jobs}`,
        met: once,
        note: `${dup.twice.length} run twice, ${o.jobs - dup.taken} never run, ${refused} refused${firstError ? ` (${firstError})` : ''}; ${s.workers.stats.errors} worker-side errors${s.workers.stats.firstError ? ` (${s.workers.stats.firstError})` : ''}`,
      },
      ...statRows(w, st, 'submission to drain'),
    ]
  } finally {
    await s.stop()
  }
}

/**
 * Churn: `workers` warm workers (min = max) take jobs of 2 s submitted at about half the fleet's rate, while
 * 10 % of the workers per minute are lost (their virtual host goes away, as a deleted Pod or node).
 */
async function churn(ctx: BenchContext, o: { endpoints: number; workers: number }): Promise<Row[]> {
  const w = `fleet churn ${o.workers}w/${o.endpoints}ep`
  const per = Math.ceil(o.workers / o.endpoints)
  const total = per * o.endpoints
  const s = await FleetServer.start({
    hosts: Math.ceil((total * 1.5) / 8),
    workers: { jobMs: 2000 },
    nodeArgs: profileArgs('churn'),
  })
  try {
    const { key, ids } = await setUp(s, o.endpoints, { min: per, max: per })
    await until(`${total} virtual workers`, () => s.workers.size >= total, 600_000, 200)
    await sleep(2_000)
    s.resetStats()
    const runMs = ctx.quick ? 8_000 : 180_000
    const rate = total / 2 / 2 // jobs/s: half the fleet busy with 2 s jobs
    const pool = new Pool(s.url, { connections: 16 })
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    let submitted = 0
    let refused = 0
    let lost = 0
    const replaceMs: number[] = []
    const t0 = performance.now()
    const submitter = (async () => {
      while (performance.now() - t0 < runMs) {
        const batch = Math.max(1, Math.round(rate / 10))
        await Promise.all(
          Array.from({ length: batch }, async () => {
            const i = submitted++
            const res = await pool.request({
              path: `/v2/${ids[i % ids.length]}/run`,
              method: 'POST',
              headers,
              body: JSON.stringify({ input: { i } }),
            })
            await res.body.dump()
            if (res.statusCode !== 200) refused++
          }),
        )
        await sleep(100)
      }
    })()
    // Every 6 s, 1 % of the workers are lost: 10 % a minute.
    while (performance.now() - t0 < runMs) {
      await sleep(6_000)
      const victims = s.workers
        .ids()
        .sort(() => Math.random() - 0.5)
        .slice(0, Math.max(1, Math.round(total / 100)))
      const lostAt = performance.now()
      for (const id of victims) s.workers.stop(id)
      lost += victims.length
      void until('replacements', () => s.workers.size >= total, 60_000, 50).then(
        () => replaceMs.push(performance.now() - lostAt),
        () => replaceMs.push(Number.POSITIVE_INFINITY),
      )
    }
    await submitter
    await pool.close()
    await until(`${submitted - refused} jobs done`, () => s.workers.stats.dones >= submitted - refused, 120_000, 100)
    const st = await s.stats()
    const dup = s.workers.duplicates()
    replaceMs.sort((a, b) => a - b)
    return [
      {
        workload: w,
        metric: 'jobs completed',
        value: s.workers.stats.dones,
        unit: 'jobs',
        goal: `${submitted - refused}, none twice`,
        met: s.workers.stats.dones >= submitted - refused && dup.twice.length === 0 && refused === 0,
        note: `${lost} workers lost over ${round(runMs / 1000)} s; ${dup.rerun} jobs run again after their worker was lost, ${dup.twice.length} run twice otherwise, ${refused} refused`,
      },
      {
        workload: w,
        metric: 'lost workers replaced p50',
        value: round(percentile(replaceMs, 50) / 1000, 2),
        unit: 's',
        note: `max ${round(replaceMs[replaceMs.length - 1] / 1000, 2)} s (each 1 % wave, until the fleet is whole again; scaling interval 0.25 s, heartbeat loss not needed: the runtime reports the exit)`,
      },
      ...statRows(w, st, 'while losing workers'),
    ]
  } finally {
    await s.stop()
  }
}
