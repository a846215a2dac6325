import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import pg from 'pg'
import { Pool } from 'undici'
import { FleetServer, type ControlPlaneStats } from '../fleet/FleetServer.js'
import { VirtualWorkers } from '../fleet/VirtualWorkers.js'
import { kubernetesFleet } from './fleetKubernetes.js'
import { percentile, round, sleep, until, type BenchContext, type Row } from '../lib.js'

/**
 * Workload `fleet` (issue 35): a GPU fleet on one control plane, by simulation. Hangar runs in a process of
 * its own with the simulated runtime (bench/fleet/serve.ts); its workers are virtual ones in this process,
 * speaking the Python SDK's protocol (bench/fleet/VirtualWorkers.ts) on virtual hosts of 8 GPUs. Three
 * scenarios, each on a fresh control plane in a full run:
 * - idle: warm workers on many endpoints, nothing queued: what keeping them costs the leader;
 * - burst: jobs across many endpoints from zero workers: time to N running workers, job-take latency,
 *   scaling pass time, drain time, each job run exactly once;
 * - churn: 10 % of the workers lost per minute while jobs run: every job completes, lost ones are replaced.
 * Sizes are the issue's in a full run. With --quick (CI's smoke run) they are a tenth or less, and the three
 * scenarios share one control plane, one after the other, each on an account of its own whose endpoints are
 * deleted (and their workers gone) before the next begins: the run checks that every scenario works end to
 * end, no job lost or run twice, and is no measurement. HANGAR_BENCH_FLEET_SCALE multiplies the full sizes
 * (0.2 = a fifth), HANGAR_BENCH_FLEET_PROF=<dir> writes a CPU profile of each control plane there,
 * HANGAR_BENCH_FLEET_ONLY=idle,burst,churn,replicas,kubernetes runs only those, HANGAR_BENCH_FLEET_CHURN_S the
 * churn's length in a full run (180 s). With HANGAR_BENCH_FLEET_PG=<postgres URL> a fourth scenario, replicas,
 * runs the burst on two replicas sharing a fresh schema of that database (dropped afterwards). A fifth,
 * kubernetes (./fleetKubernetes.ts), runs Hangar's Kubernetes runtime over virtual Nodes of a real cluster when
 * one answers, and is skipped with its reason printed when none does (CI's smoke run comes before its
 * Kubernetes stage starts the cluster).
 */
export async function fleet(ctx: BenchContext): Promise<Row[]> {
  const scale = Number(process.env.HANGAR_BENCH_FLEET_SCALE) || 1
  const n = (full: number) => Math.max(1, Math.round(full * scale))
  // The quick run (CI's smoke run, about 30 s on 2 cores with its one control plane's start-up) is a check
  // that the scenarios work, not a measurement.
  const sizes = ctx.quick
    ? {
        idle: { endpoints: 20, workers: 200 },
        burst: { endpoints: 10, jobs: 500 },
        churn: { endpoints: 5, workers: 50 },
        kubernetes: { nodes: 20, pods: 40, endpoints: 4 },
      }
    : {
        idle: { endpoints: n(500), workers: n(5_000) },
        burst: { endpoints: n(500), jobs: n(50_000) },
        churn: { endpoints: n(100), workers: n(1_000) },
        kubernetes: { nodes: n(1_000), pods: n(2_000), endpoints: n(100) },
      }
  const only = process.env.HANGAR_BENCH_FLEET_ONLY?.split(',')
  const target = Math.min(1_000, sizes.burst.endpoints * 10)
  const perEndpoint = (o: { endpoints: number; workers: number }) => Math.ceil(o.workers / o.endpoints)
  const hosts = {
    idle: Math.ceil((perEndpoint(sizes.idle) * sizes.idle.endpoints) / 8),
    burst: Math.ceil((sizes.burst.endpoints * 10) / 8),
    churn: Math.ceil((perEndpoint(sizes.churn) * sizes.churn.endpoints * 1.5) / 8),
  }
  // One control plane for the quick run's scenarios: its start (a second or more of loading Hangar) is most
  // of a quick scenario's time.
  const shared = ctx.quick
    ? await FleetServer.start({
        hosts: Math.max(hosts.idle, hosts.burst, hosts.churn),
        workers: { jobMs: jobMsOf },
        nodeArgs: profileArgs('quick'),
      })
    : undefined
  const fleetFor = (name: keyof typeof hosts) =>
    shared ?? FleetServer.start({ hosts: hosts[name], workers: { jobMs: jobMsOf }, nodeArgs: profileArgs(name) })
  const rows: Row[] = []
  try {
    if (!only || only.includes('idle')) rows.push(...(await idle(ctx, await fleetFor('idle'), sizes.idle)))
    if (!only || only.includes('burst'))
      rows.push(...(await burst(ctx, await fleetFor('burst'), { ...sizes.burst, perEndpoint: 10, target })))
    if (!only || only.includes('churn')) rows.push(...(await churn(ctx, await fleetFor('churn'), sizes.churn)))
    const pg = process.env.HANGAR_BENCH_FLEET_PG
    if (pg && (!only || only.includes('replicas'))) {
      const o = { ...sizes.burst, perEndpoint: 10, target }
      rows.push(...(await replicas(ctx, pg, o, hosts.burst)))
    }
    if (!only || only.includes('kubernetes'))
      rows.push(...(await kubernetesFleet(ctx, sizes.kubernetes, profileArgs('kubernetes'))))
  } finally {
    await shared?.stop()
  }
  return rows
}

/** A job runs for the ms its input names (`{ ms }`), 1 s if none. */
const jobMsOf = (job: { input: unknown }) => Number((job.input as { ms?: unknown } | null)?.ms) || 1000

/**
 * Ends a scenario: its control plane is stopped, or on a shared one (quick run) its endpoints are deleted and
 * the next scenario begins once their workers are gone, with the workers' counts and the stats reset.
 */
async function finish(ctx: BenchContext, s: FleetServer, scenario: { key: string; ids: string[] } | undefined) {
  if (!ctx.quick) return s.stop()
  // A scenario that failed leaves the shared control plane as it is: fleet() stops it.
  if (!scenario) return
  for (const id of scenario.ids) {
    const r = await s.api('DELETE', `/v2/serverless/${id}`, undefined, scenario.key)
    if (r.status !== 204) throw new Error(`delete endpoint: ${r.status} ${JSON.stringify(r.body)}`)
  }
  await until("the scenario's workers gone", () => s.workers.size === 0, 60_000, 100)
  s.workers.reset()
  s.resetStats()
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

/** An account of the scenario's own (one control plane may hold several, one after the other) and its endpoints. */
async function setUp(s: FleetServer, name: string, endpoints: number, workers: { min: number; max: number }) {
  const account = `fleet-${name}`
  await s.api('POST', '/v2/admin/accounts', { name: account, rateLimitExempt: true })
  const key = (await s.api('POST', '/v2/admin/keys', { account, permission: 'ALL' })).body.key as string
  const ids: string[] = []
  for (let i = 0; i < endpoints; i++) {
    const r = await s.api('POST', '/v2/serverless', GPU_ENDPOINT(`${account}-${i}`, workers), key)
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
async function idle(ctx: BenchContext, s: FleetServer, o: { endpoints: number; workers: number }): Promise<Row[]> {
  const w = `fleet idle ${o.workers}w/${o.endpoints}ep`
  const per = Math.ceil(o.workers / o.endpoints)
  let made: Awaited<ReturnType<typeof setUp>> | undefined
  try {
    const t0 = performance.now()
    made = await setUp(s, 'idle', o.endpoints, { min: per, max: per })
    await until(`${per * o.endpoints} virtual workers`, () => s.workers.size >= per * o.endpoints, 600_000, 200)
    const warmMs = performance.now() - t0
    // Every worker has pinged and holds its take; the start-up's work is over.
    await sleep(ctx.quick ? 1_000 : 15_000)
    s.resetStats()
    await sleep(ctx.quick ? 3_000 : 60_000)
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
    await finish(ctx, s, made)
  }
}

/** Burst: `jobs` jobs across `endpoints` endpoints from zero workers (max `perEndpoint` each), jobs of 1 s (0.2 s quick). */
async function burst(
  ctx: BenchContext,
  s: FleetServer,
  o: { endpoints: number; jobs: number; perEndpoint: number; target: number },
  /** A second replica on the same PostgreSQL schema: every other job is submitted to it. */
  follower?: FleetServer,
): Promise<Row[]> {
  const w = follower
    ? `fleet burst, 2 PostgreSQL replicas, ${o.jobs}j/${o.endpoints}ep`
    : `fleet burst ${o.jobs}j/${o.endpoints}ep`
  const jobMs = ctx.quick ? 200 : 1000
  let made: Awaited<ReturnType<typeof setUp>> | undefined
  try {
    made = await setUp(s, 'burst', o.endpoints, { min: 0, max: o.perEndpoint })
    const { key, ids } = made
    await sleep(ctx.quick ? 300 : 1_000)
    s.resetStats()
    follower?.resetStats()
    const t0 = performance.now()
    let toTarget = Number.NaN
    let peak = 0
    const sampler = setInterval(() => {
      peak = Math.max(peak, s.workers.size)
      if (Number.isNaN(toTarget) && s.workers.size >= o.target) toTarget = performance.now() - t0
    }, 50)
    const pools = [s, ...(follower ? [follower] : [])].map((r) => new Pool(r.url, { connections: 32 }))
    let next = 0
    let refused = 0
    let firstError = ''
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const lane = async () => {
      while (next < o.jobs) {
        const i = next++
        const res = await pools[i % pools.length].request({
          path: `/v2/${ids[i % ids.length]}/run`,
          method: 'POST',
          headers,
          body: JSON.stringify({ input: { i, ms: jobMs } }),
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
      await Promise.all(pools.map((p) => p.close()))
    }
    const drainMs = performance.now() - t0
    const st = await s.stats()
    const fst = await follower?.stats()
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
      ...(fst
        ? [
            ...statRows(w, st, 'submission to drain; half the submissions, every worker call').map((r) => ({
              ...r,
              metric: `leader ${r.metric}`,
            })),
            ...statRows(w, fst, 'submission to drain; half the submissions').map((r) => ({
              ...r,
              metric: `follower ${r.metric}`,
            })),
          ]
        : statRows(w, st, 'submission to drain')),
    ]
  } finally {
    await follower?.stop()
    await finish(ctx, s, made)
  }
}

/**
 * Churn: `workers` warm workers (min = max) take jobs of 2 s submitted at about half the fleet's rate, while
 * 10 % of the workers per minute are lost (their virtual host goes away, as a deleted Pod or node).
 */
async function churn(ctx: BenchContext, s: FleetServer, o: { endpoints: number; workers: number }): Promise<Row[]> {
  const w = `fleet churn ${o.workers}w/${o.endpoints}ep`
  const per = Math.ceil(o.workers / o.endpoints)
  const total = per * o.endpoints
  let made: Awaited<ReturnType<typeof setUp>> | undefined
  try {
    made = await setUp(s, 'churn', o.endpoints, { min: per, max: per })
    const { key, ids } = made
    await until(`${total} virtual workers`, () => s.workers.size >= total, 600_000, 200)
    await sleep(ctx.quick ? 1_000 : 2_000)
    s.resetStats()
    const runMs = ctx.quick ? 6_000 : (Number(process.env.HANGAR_BENCH_FLEET_CHURN_S) || 180) * 1000
    // 1 % of the workers lost each wave: every 6 s is 10 % a minute; the quick run's waves come every 2 s.
    const waveMs = ctx.quick ? 2_000 : 6_000
    const rate = total / 2 / 2 // jobs/s: half the fleet busy with 2 s jobs
    const pool = new Pool(s.url, { connections: 16 })
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    let submitted = 0
    let refused = 0
    let lost = 0
    const replaceMs: number[] = []
    /** Job id -> its endpoint, to ask after the jobs that never finish. */
    const jobs = new Map<string, string>()
    const t0 = performance.now()
    const submitter = (async () => {
      while (performance.now() - t0 < runMs) {
        const batch = Math.max(1, Math.round(rate / 10))
        await Promise.all(
          Array.from({ length: batch }, async () => {
            const i = submitted++
            const endpoint = ids[i % ids.length]
            const res = await pool.request({
              path: `/v2/${endpoint}/run`,
              method: 'POST',
              headers,
              body: JSON.stringify({ input: { i, ms: 2_000 } }),
            })
            const text = await res.body.text()
            if (res.statusCode !== 200) refused++
            else jobs.set((JSON.parse(text) as { id: string }).id, endpoint)
          }),
        )
        await sleep(100)
      }
    })()
    const replacing: Promise<unknown>[] = []
    while (performance.now() - t0 < runMs) {
      await sleep(waveMs)
      const victims = s.workers
        .ids()
        .sort(() => Math.random() - 0.5)
        .slice(0, Math.max(1, Math.round(total / 100)))
      const lostAt = performance.now()
      for (const id of victims) s.workers.stop(id)
      lost += victims.length
      replacing.push(
        until('replacements', () => s.workers.size >= total, 60_000, 50).then(
          () => replaceMs.push(performance.now() - lostAt),
          () => replaceMs.push(Number.POSITIVE_INFINITY),
        ),
      )
    }
    await submitter
    // Every wave's replacement is in (or timed out) before the fleet is counted, and before it is taken down.
    await Promise.all(replacing)
    await pool.close()
    // A job whose worker was lost while its job-done was in flight can be COMPLETED in Hangar without the
    // worker seeing the answer: those are asked after once the count stalls. Jobs that never finish are
    // reported (how many, and what Hangar says of a few), not thrown.
    const expected = submitted - refused
    const missing = () => [...jobs].filter(([id]) => !s.workers.executions.get(id)?.some((e) => e.done))
    const statusOf = async ([id, endpoint]: [string, string]) =>
      (await s.api('GET', `/v2/${endpoint}/status/${id}`, undefined, key)).body?.status as string | undefined
    let answerLost = 0
    let last = { dones: -1, at: performance.now() }
    const drained = await until(
      `${expected} jobs done`,
      async () => {
        const dones = s.workers.stats.dones
        if (dones >= expected) return true
        if (dones !== last.dones) last = { dones, at: performance.now() }
        if (performance.now() - last.at < 5_000 || expected - dones > 50) return false
        const left = missing()
        const statuses = await Promise.all(left.map(statusOf))
        if (!statuses.every((st) => st === 'COMPLETED')) return false
        answerLost = left.length
        return true
      },
      120_000,
      100,
    ).then(
      () => '',
      async () => {
        const left = missing()
        const seen: string[] = []
        for (const job of left.slice(0, 5)) {
          seen.push(`${job[0]} ${await statusOf(job)}, taken ${s.workers.executions.get(job[0])?.length ?? 0}x`)
        }
        return `; not done after 120 s: ${left.length} (${seen.join('; ')})`
      },
    )
    const st = await s.stats()
    const dup = s.workers.duplicates()
    replaceMs.sort((a, b) => a - b)
    return [
      {
        workload: w,
        metric: 'jobs completed',
        value: s.workers.stats.dones + answerLost,
        unit: 'jobs',
        goal: `${submitted - refused}, none twice`,
        met: s.workers.stats.dones + answerLost >= expected && dup.twice.length === 0 && refused === 0,
        note: `${lost} workers lost over ${round(runMs / 1000)} s (a wave each ${waveMs / 1000} s); ${dup.rerun} jobs run again after their worker was lost, ${dup.twice.length} run twice otherwise, ${refused} refused; ${answerLost} COMPLETED in Hangar whose answer was lost with their worker${drained}`,
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
    await finish(ctx, s, made)
  }
}

/**
 * The burst on two replicas sharing a fresh schema of the PostgreSQL at `url` (dropped afterwards): the one
 * started first leads (runs the scaler and the starts; the virtual workers call it), the other takes every
 * other submission. What each spends.
 */
async function replicas(
  ctx: BenchContext,
  url: string,
  o: { endpoints: number; jobs: number; perEndpoint: number; target: number },
  hosts: number,
): Promise<Row[]> {
  const schema = `fleet_${Date.now().toString(36)}`
  const databaseUrl = `${url}${url.includes('?') ? '&' : '?'}schema=${schema}`
  const config = { databaseUrl, adminApiKey: `fleet-admin-${randomBytes(12).toString('hex')}` }
  const workers = new VirtualWorkers({ jobMs: jobMsOf })
  const started: FleetServer[] = []
  try {
    started.push(await FleetServer.start({ hosts, workers, config, nodeArgs: profileArgs('leader') }))
    started.push(await FleetServer.start({ hosts, workers, config, nodeArgs: profileArgs('follower') }))
    // burst() stops the follower, then the leader (a quick run: deletes the endpoints); stop() is once only.
    return await burst(ctx, started[0], o, started[1])
  } finally {
    for (const r of started.reverse()) await r.stop()
    await workers.close()
    const db = new pg.Client({ connectionString: url })
    await db.connect()
    await db.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await db.end()
  }
}
