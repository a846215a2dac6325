import Database from 'better-sqlite3'
import pg from 'pg'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '../../src/runtime/freePort.js'
import { profileMarkdown, summarizeProfileDir, type ProfileSummary } from '../profile.js'
import {
  accountKey,
  childPids,
  cpuMeter,
  createQueueEndpoint,
  jobServerConfig,
  percentile,
  round,
  startServer,
  submitJobs,
  until,
  waitReady,
  type BenchContext,
  type BenchServer,
  type Row,
} from '../lib.js'

/** Worker processes and jobs each runs at once, the same for Hangar (workload 1) and BullMQ (workload 2). */
export const WORKERS = 2
export const CONCURRENCY = 32
/** Client side: keep-alive connections and requests outstanding. */
const CONNECTIONS = 64
const IN_FLIGHT = 256

// HANGAR_BENCH_JOBS overrides the count (exploratory runs).
export const jobCount = (ctx: BenchContext) => Number(process.env.HANGAR_BENCH_JOBS) || (ctx.quick ? 2_000 : 50_000)
const setup = `${WORKERS} worker processes x concurrency ${CONCURRENCY}`

/** What one batch of jobs measured. */
export interface ThroughputResult {
  jobs: number
  jobsPerSec: number
  submitPerSec: number
  p50: number
  p99: number
  failed: number
  /** CPU µs per job: control plane (or Redis), worker processes, the client (this process). */
  cpu: { server: number; workers: number; client: number }
}

/**
 * Workload 1: async /run jobs with a no-op handler on TypeScript SDK workers, submitted over keep-alive
 * connections. Completion is tracked without webhooks: /health counts, then the server's own createdAt /
 * completedAt of every job are read from its store. A second, smaller run under --cpu-prof shows where
 * the control plane spends its time (the figures above come from the unprofiled run).
 */
export async function hangarThroughput(ctx: BenchContext): Promise<Row[]> {
  const n = jobCount(ctx)
  const r = await runHangar(n)
  ctx.shared.hangarJobsPerSec = r.jobsPerSec
  const profJobs = ctx.quick ? n : 20_000
  let profile: ProfileSummary | undefined
  // HANGAR_BENCH_NO_PROFILE=1 skips the profiled run (exploratory runs).
  if (!process.env.HANGAR_BENCH_NO_PROFILE) {
    // HANGAR_BENCH_KEEP_PROFILE=<dir> keeps the .cpuprofile there (to open in DevTools).
    const profDir = process.env.HANGAR_BENCH_KEEP_PROFILE ?? mkdtempSync(join(tmpdir(), 'hangar-prof-'))
    try {
      await runHangar(profJobs, ['--cpu-prof', `--cpu-prof-dir=${profDir}`])
      // From the first submission on: start-up is not what a job costs.
      profile = summarizeProfileDir(profDir, 'submit')
    } finally {
      if (!process.env.HANGAR_BENCH_KEEP_PROFILE) rmSync(profDir, { recursive: true, force: true })
    }
    ctx.sections.push(
      profileMarkdown(
        `Workload 1: control-plane CPU profile (${profJobs} jobs, ${setup}; from the first submission on)`,
        profile,
      ),
    )
  }
  const topFn = profile?.functions[0]
  const w = '1 async /run jobs'
  const pgRows = await postgresThroughput(n, r.jobsPerSec, w)
  return [
    {
      workload: w,
      metric: 'completed jobs/s',
      value: round(r.jobsPerSec),
      unit: 'jobs/s',
      goal: '>= 5000',
      met: r.jobsPerSec >= 5_000,
      note: `${r.jobs} jobs, ${setup}, ${CONNECTIONS} keep-alive connections, ${IN_FLIGHT} in flight`,
    },
    {
      workload: w,
      metric: 'submit rate (/run 200s)',
      value: round(r.submitPerSec),
      unit: 'jobs/s',
      note: r.failed ? `${r.failed} refused` : undefined,
    },
    { workload: w, metric: 'submit->COMPLETED p50', value: r.p50, unit: 'ms' },
    { workload: w, metric: 'submit->COMPLETED p99', value: r.p99, unit: 'ms' },
    {
      workload: w,
      metric: 'control-plane CPU per job',
      value: round(r.cpu.server),
      unit: 'µs',
      goal: '<= 150 µs',
      met: r.cpu.server <= 150,
      note: `workers ${round(r.cpu.workers)} µs, client ${round(r.cpu.client)} µs; CPU time barely moves when other programs load the machine`,
    },
    {
      workload: w,
      metric: 'control plane busy (profiled run)',
      value: profile?.busyPercent ?? NaN,
      unit: '%',
      note: topFn ? `top self time: ${topFn.name} ${topFn.percent} %` : 'not profiled',
    },
    ...pgRows,
  ]
}

/** Where workload 1 runs on PostgreSQL: HANGAR_BENCH_DATABASE_URL, else the local `test` database. */
const PG_URL = process.env.HANGAR_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/**
 * Workload 1 again with the store on PostgreSQL (one replica, a fresh schema dropped afterwards), beside the
 * SQLite figure. Without a reachable PostgreSQL the rows say why and the run goes on.
 */
async function postgresThroughput(n: number, sqliteJobsPerSec: number, w: string): Promise<Row[]> {
  const admin = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3_000 })
  try {
    await admin.connect()
  } catch (err) {
    const reason = `skipped: PostgreSQL at ${PG_URL} unreachable (${(err as Error).message})`
    process.stderr.write(`workload 1 on PostgreSQL ${reason}\n`)
    return [{ workload: w, metric: 'completed jobs/s, PostgreSQL 1 replica', value: NaN, unit: 'jobs/s', note: reason }]
  }
  const schema = `hangar_bench_${Date.now().toString(36)}`
  const schema2 = `${schema}_2`
  try {
    const r = await runHangar(n, [], { url: PG_URL, schema })
    const ratio = r.jobsPerSec / sqliteJobsPerSec
    const r2 = await runHangar(n, [], { url: PG_URL, schema: schema2 }, 2)
    const pinned = await pinnedReplicas(n, schema, w)
    return [
      {
        workload: w,
        metric: 'completed jobs/s, PostgreSQL 1 replica',
        value: round(r.jobsPerSec),
        unit: 'jobs/s',
        goal: '>= 0.5x SQLite',
        met: ratio >= 0.5,
        note: `${round(ratio, 2)}x SQLite; ${r.jobs} jobs, same setup; PostgreSQL on the same machine`,
      },
      { workload: w, metric: 'submit->COMPLETED p50, PostgreSQL', value: r.p50, unit: 'ms' },
      { workload: w, metric: 'submit->COMPLETED p99, PostgreSQL', value: r.p99, unit: 'ms' },
      {
        workload: w,
        metric: 'control-plane CPU per job, PostgreSQL',
        value: round(r.cpu.server),
        unit: 'µs',
        note: "the database server's own CPU not included",
      },
      {
        workload: w,
        metric: 'completed jobs/s, PostgreSQL 2 replicas',
        value: round(r2.jobsPerSec),
        unit: 'jobs/s',
        note: `${round(r2.jobsPerSec / r.jobsPerSec, 2)}x 1 replica, ${round(r2.jobsPerSec / sqliteJobsPerSec, 2)}x SQLite; ${r2.jobs} jobs; the client sends half the jobs (and connections) to each replica; the ${WORKERS} workers are the leader's and call the follower (their workerUrl), so the follower serves the whole worker protocol; both replicas, the workers and PostgreSQL share the 2 cores`,
      },
      { workload: w, metric: 'submit->COMPLETED p50, PostgreSQL 2 replicas', value: r2.p50, unit: 'ms' },
      {
        workload: w,
        metric: 'control-plane CPU per job, PostgreSQL 2 replicas',
        value: round(r2.cpu.server),
        unit: 'µs',
        note: 'both replicas together',
      },
      ...pinned,
    ]
  } finally {
    for (const x of ['_p1', '_p2']) await admin.query(`DROP SCHEMA IF EXISTS ${schema}${x} CASCADE`).catch(() => {})
    await admin.query(`DROP SCHEMA IF EXISTS ${schema2} CASCADE`).catch(() => {})
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {})
    await admin.end()
  }
}

/**
 * Replicas, each with a core budget of its own: one replica on CPU 0, then two on CPUs 0 and 1 (`taskset`). The
 * workers, PostgreSQL and the client may run on every core in both runs, so what changes is only how much CPU
 * the control plane has: the question is whether a second replica adds its core's worth of throughput.
 */
async function pinnedReplicas(n: number, schema: string, w: string): Promise<Row[]> {
  if (cpus().length < 2)
    return [
      {
        workload: w,
        metric: 'PostgreSQL 2 replicas / 1, a core each',
        value: NaN,
        unit: 'x',
        note: `skipped: ${cpus().length} CPU`,
      },
    ]
  const one = await runHangar(n, [], { url: PG_URL, schema: `${schema}_p1` }, 1, true)
  const two = await runHangar(n, [], { url: PG_URL, schema: `${schema}_p2` }, 2, true)
  const ratio = two.jobsPerSec / one.jobsPerSec
  return [
    {
      workload: w,
      metric: 'completed jobs/s, PostgreSQL 1 replica on 1 core',
      value: round(one.jobsPerSec),
      unit: 'jobs/s',
      note: `taskset -c 0; control-plane CPU per job ${round(one.cpu.server)} µs`,
    },
    {
      workload: w,
      metric: 'completed jobs/s, PostgreSQL 2 replicas on a core each',
      value: round(two.jobsPerSec),
      unit: 'jobs/s',
      note: `taskset -c 0 and -c 1; both replicas' CPU per job ${round(two.cpu.server)} µs`,
    },
    {
      workload: w,
      metric: 'PostgreSQL 2 replicas / 1, a core each',
      value: round(ratio, 2),
      unit: 'x',
      goal: '>= 1.6 x',
      met: ratio >= 1.6,
      note: `workers, PostgreSQL and the client run on any core in both runs (${cpus().length} cores in all)`,
    },
  ]
}

/**
 * One run of workload 1. With `replicas: 2` (PostgreSQL), a second `hangar serve` on the same schema and data
 * dir follows the first (the leader); the client splits jobs and connections evenly between them, and the
 * workers, started by the leader, call the follower (workerUrl: its address, on a port chosen beforehand).
 */
async function runHangar(
  n: number,
  nodeArgs: string[] = [],
  database?: { url: string; schema: string },
  replicas: 1 | 2 = 1,
  pinned = false,
): Promise<ThroughputResult> {
  const env: Record<string, string> = database
    ? { HANGAR_DATABASE_URL: database.url, HANGAR_DATABASE_SCHEMA: database.schema }
    : {}
  const followerPort = replicas === 2 ? await freePort() : 0
  const config = jobServerConfig(replicas === 2 ? { workerUrl: `http://127.0.0.1:${followerPort}` } : {})
  const s = await startServer(config, env, { nodeArgs, cpus: pinned ? '0' : undefined })
  const servers = [s]
  try {
    if (replicas === 2)
      servers.push(
        await startServer(config, env, {
          nodeArgs,
          dataDir: s.dataDir,
          port: followerPort,
          cpus: pinned ? '1' : undefined,
        }),
      )
    const key = await accountKey(s, 'bench', true)
    const ep = await createQueueEndpoint(s, key, 'bench/noop:latest', {
      env: { HANGAR_BENCH_CONCURRENCY: String(CONCURRENCY) },
      workers: { min: WORKERS, max: WORKERS, idleTimeout: 60 },
    })
    await waitReady(s, key, ep, WORKERS)
    // Workers inherit the leader's CPU list: they get every core back (only the control plane is budgeted).
    if (pinned)
      for (const pid of childPids(s.child.pid!))
        spawnSync('taskset', ['-a', '-p', '-c', `0-${cpus().length - 1}`, String(pid)], { stdio: 'ignore' })
    const meters = servers.map((x, i) => cpuMeter(x.child.pid!, i === 0 ? childPids(x.child.pid!) : []))
    const share = (i: number) => Math.floor(n / servers.length) + (i < n % servers.length ? 1 : 0)
    const parts = await Promise.all(
      servers.map((x, i) =>
        submitJobs(x, key, ep, share(i), {
          connections: CONNECTIONS / servers.length,
          inFlight: IN_FLIGHT / servers.length,
        }),
      ),
    )
    const failed = parts.reduce((a, p) => a + p.failed, 0)
    if (failed)
      throw new Error(`${failed} of ${n} submissions refused; first: ${parts.find((p) => p.firstError)?.firstError}`)
    await waitCompleted(s, key, ep, n)
    const cpu = meters.map((m) => m(n))
    const server = cpu.reduce((a, c) => a + c.server, 0)
    return {
      ...(database ? await jobTimesPg(database) : jobTimes(s)),
      submitPerSec: (n / Math.max(...parts.map((p) => p.ms))) * 1000,
      failed,
      cpu: { ...cpu[0], server },
    }
  } finally {
    // The follower first: the leader, stopping last, stops the workers rather than handing them over.
    for (const x of servers.reverse()) await x.stop()
  }
}

/** Polls /health until `n` jobs completed (a failure means the workload is broken: stop). */
async function waitCompleted(s: BenchServer, key: string, ep: string, n: number): Promise<void> {
  await until(
    `${n} completed jobs`,
    async () => {
      const h = (await s.api('GET', `/v2/${ep}/health`, undefined, key)).body
      if (h.jobs.failed > 0) throw new Error(`${h.jobs.failed} jobs failed`)
      return h.jobs.completed >= n
    },
    600_000,
    250,
  )
}

/** Throughput and latency from the server's own timestamps (store file, read-only). */
function jobTimes(s: BenchServer): Omit<ThroughputResult, 'submitPerSec' | 'failed' | 'cpu'> {
  const db = new Database(s.dbFile, { readonly: true, fileMustExist: true })
  try {
    return times(
      db.prepare(`SELECT created_at AS c, completed_at AS d FROM jobs WHERE status = 'COMPLETED'`).all() as Array<{
        c: number
        d: number
      }>,
    )
  } finally {
    db.close()
  }
}

/** The same from the PostgreSQL schema the server used. */
async function jobTimesPg(database: {
  url: string
  schema: string
}): Promise<Omit<ThroughputResult, 'submitPerSec' | 'failed' | 'cpu'>> {
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  try {
    const { rows } = await client.query<{ c: string; d: string }>(
      `SELECT created_at AS c, completed_at AS d FROM ${database.schema}.jobs WHERE status = 'COMPLETED'`,
    )
    return times(rows.map((r) => ({ c: Number(r.c), d: Number(r.d) })))
  } finally {
    await client.end()
  }
}

function times(rows: Array<{ c: number; d: number }>): Omit<ThroughputResult, 'submitPerSec' | 'failed' | 'cpu'> {
  let first = Infinity
  let last = -Infinity
  const lat = rows.map((r) => {
    first = Math.min(first, r.c)
    last = Math.max(last, r.d)
    return r.d - r.c
  })
  lat.sort((a, b) => a - b)
  return {
    jobs: rows.length,
    jobsPerSec: (rows.length / Math.max(1, last - first)) * 1000,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
  }
}
