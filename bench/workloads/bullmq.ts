import { Queue } from 'bullmq'
import { fork, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { cpuMs, percentile, ROOT, round, until, type BenchContext, type Row } from '../lib.js'
import { CONCURRENCY, jobCount, WORKERS } from './jobThroughput.js'

const REDIS_URL = process.env.HANGAR_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const IN_FLIGHT = 256

/**
 * Workload 2: the jobs of workload 1 through BullMQ on the local Redis, with as many worker processes
 * running as many jobs at once, producers keeping as many adds outstanding. Compared with workload 1 of
 * the same invocation.
 */
export async function bullmqThroughput(ctx: BenchContext): Promise<Row[]> {
  const w = '2 BullMQ, same jobs'
  const n = jobCount(ctx)
  const u = new URL(REDIS_URL)
  const connection = { host: u.hostname, port: Number(u.port || 6379), maxRetriesPerRequest: null }
  const name = `hangar-bench-${process.pid}-${Date.now()}`
  const queue = new Queue(name, { connection })
  try {
    await Promise.race([
      queue.waitUntilReady(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 3_000)),
    ])
  } catch (err) {
    await queue.close().catch(() => {})
    return [
      {
        workload: w,
        metric: 'jobs/s',
        value: NaN,
        unit: 'jobs/s',
        note: `not measured: no Redis at ${REDIS_URL} (${(err as Error).message})`,
      },
    ]
  }
  const workers: ChildProcess[] = []
  try {
    for (let i = 0; i < WORKERS; i++) {
      const child = fork(join(ROOT, 'bench', 'workers', 'bullmq.mjs'), [REDIS_URL, name, String(CONCURRENCY)], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      })
      workers.push(child)
      await new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve())
        child.once('exit', (code) => reject(new Error(`BullMQ worker exited ${code}`)))
      })
    }
    let next = 0
    const lane = async () => {
      while (next < n) {
        const i = next++
        await queue.add('job', { i }, { removeOnComplete: false, removeOnFail: false })
      }
    }
    const client = await queue.client
    const redisCpu = async () => {
      const info = (await (client as unknown as { info(section: string): Promise<string> }).info('cpu')) as string
      const num = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(info)?.[1] ?? 0)
      return (num('used_cpu_user') + num('used_cpu_sys')) * 1000
    }
    const workersCpu = () => workers.reduce((a, c) => a + cpuMs(c.pid!), 0)
    const [r0, w0, c0] = [await redisCpu(), workersCpu(), process.cpuUsage()]
    const t0 = performance.now()
    await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, n) }, lane))
    const submitMs = performance.now() - t0
    await until(
      `${n} completed BullMQ jobs`,
      async () => (await queue.getJobCounts('completed')).completed >= n,
      600_000,
      250,
    )
    const cu = process.cpuUsage(c0)
    const cpu = {
      redis: (((await redisCpu()) - r0) * 1000) / n,
      workers: ((workersCpu() - w0) * 1000) / n,
      client: (cu.user + cu.system) / n,
    }
    const jobs = await queue.getJobs(['completed'], 0, -1)
    let first = Infinity
    let last = -Infinity
    const lat = jobs.map((j) => {
      first = Math.min(first, j.timestamp)
      last = Math.max(last, j.finishedOn!)
      return j.finishedOn! - j.timestamp
    })
    lat.sort((a, b) => a - b)
    const jobsPerSec = (jobs.length / Math.max(1, last - first)) * 1000
    const hangar = ctx.shared.hangarJobsPerSec
    const ratio = hangar / jobsPerSec
    return [
      {
        workload: w,
        metric: 'completed jobs/s',
        value: round(jobsPerSec),
        unit: 'jobs/s',
        note: `${jobs.length} jobs, ${WORKERS} worker processes x concurrency ${CONCURRENCY}, ${IN_FLIGHT} adds in flight`,
      },
      { workload: w, metric: 'add rate', value: round((n / submitMs) * 1000), unit: 'jobs/s' },
      { workload: w, metric: 'add->completed p50', value: percentile(lat, 50), unit: 'ms' },
      { workload: w, metric: 'add->completed p99', value: percentile(lat, 99), unit: 'ms' },
      {
        workload: w,
        metric: 'Redis CPU per job',
        value: round(cpu.redis),
        unit: 'µs',
        note: `workers ${round(cpu.workers)} µs, client ${round(cpu.client)} µs`,
      },
      {
        workload: w,
        metric: 'ratio Hangar / BullMQ',
        value: round(ratio, 2),
        unit: 'x',
        goal: '>= 0.7',
        met: ratio >= 0.7,
        note: hangar ? 'workload 1 of this run' : 'workload 1 did not run',
      },
    ]
  } finally {
    await Promise.all(
      workers.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve()
            c.once('exit', () => resolve())
            c.kill('SIGTERM')
            setTimeout(() => c.kill('SIGKILL'), 10_000).unref()
          }),
      ),
    )
    await queue.obliterate({ force: true }).catch(() => {})
    await queue.close()
  }
}
