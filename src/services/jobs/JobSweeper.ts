import type { Clock } from '../../domain/clock.js'
import type { Store } from '../../store/Store.js'
import type { JobLifecycle } from './JobLifecycle.js'
import type { Log } from '../log.js'

const BATCH = 500
/** Expired Idempotency-Keys are swept this often (a claim replaces an expired key by itself meanwhile). */
const KEY_SWEEP_MS = 60_000

/** What the sweeper asks of the workers: to give up on those that went silent or never called in. */
export interface WorkerLiveness {
  checkLiveness(): void
}

export interface JobSweeperOptions {
  store: Store
  clock: Clock
  lifecycle: JobLifecycle
  /** The workers' heartbeats are checked on every pass (see WorkerService.checkLiveness). */
  workers: WorkerLiveness
  log: Log
  intervalMs: number
}

/**
 * Enforces the deadlines: execution timeouts (TIMED_OUT, and the worker is told to stop), TTL and result
 * retention (the job is deleted, a running one stopped first), and worker heartbeats. Runs every
 * `intervalMs`; `sweep()` runs it on demand (tests move their clock, then sweep).
 */
export class JobSweeper {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private nextKeySweep = 0

  constructor(private readonly o: JobSweeperOptions) {}

  start(): void {
    this.timer = setInterval(
      () => void this.sweep().catch((err) => this.o.log.error({ err }, 'sweep failed')),
      this.o.intervalMs,
    )
    this.timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.running
  }

  /** One pass over every deadline; concurrent calls share the pass in progress. */
  sweep(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = undefined))
    return this.running
  }

  private async pass(): Promise<void> {
    const { store, clock, lifecycle, workers, log } = this.o
    const now = clock.now()
    for (const job of await store.jobs.listTimedOut(now, BATCH)) {
      const ms = job.executionTimeoutMs
      const moved = await lifecycle.apply(job.id, 'timeout', {
        error: `execution timeout: the job ran longer than ${ms} ms`,
      })
      if (moved) log.info({ jobId: job.id, endpointId: job.endpointId, workerId: job.workerId }, 'job timed out')
    }
    for (const job of await store.jobs.listExpired(now, BATCH)) {
      if (await lifecycle.remove(job)) {
        log.info(
          {
            jobId: job.id,
            endpointId: job.endpointId,
            status: job.status,
            why: job.expiresAt <= now ? 'ttl' : 'retention',
          },
          'job expired',
        )
      }
    }
    if (now >= this.nextKeySweep) {
      this.nextKeySweep = now + KEY_SWEEP_MS
      await store.jobs.sweepIdempotencyKeys(now, BATCH * 10)
    }
    workers.checkLiveness()
  }
}
