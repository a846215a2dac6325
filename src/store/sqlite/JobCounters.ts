import type Database from 'better-sqlite3'
import type { JobStatus } from '../../contract/job.js'
import type { JobCounts } from '../JobStore.js'

/** The fields of a job row that counting needs. */
export interface CountedJob {
  endpointId: string
  status: JobStatus
  lowPriority: boolean
  retries: number
}

/** One endpoint's jobs by state (FAILED counts TIMED_OUT too) and the sum of their retries. */
export type Tally = Omit<JobCounts, 'oldestQueuedAt'> & {
  /** Every job kept, CANCELLED included: the tally is dropped at 0. */
  total: number
}

/**
 * Job counts per endpoint kept in memory, in step with every write of the SqliteJobStore, so /health
 * and the scaler (which asks on every submission) cost O(endpoints) instead of a scan of every job.
 * Loaded from the table once at open. The store applies a change only once its statement succeeded;
 * job writes are never wrapped in an outer transaction that could roll them back.
 */
export class JobCounters {
  private readonly tallies = new Map<string, Tally>()
  /** The highest queue position (`seq`) in the table when it was counted: read in the same scan. */
  readonly maxSeq: number

  constructor(db: Database.Database) {
    const rows = db
      .prepare(
        'SELECT endpoint_id, status, low_priority, count(*) AS n, coalesce(sum(retries), 0) AS retried, max(seq) AS max_seq FROM jobs GROUP BY endpoint_id, status, low_priority',
      )
      .all() as Array<{
      endpoint_id: string
      status: JobStatus
      low_priority: number
      n: number
      retried: number
      max_seq: number
    }>
    let maxSeq = 0
    for (const r of rows) {
      this.apply(r.endpoint_id, r.status, r.low_priority === 1, r.n, r.retried)
      maxSeq = Math.max(maxSeq, r.max_seq)
    }
    this.maxSeq = maxSeq
  }

  /** A job appeared (inserted) or disappeared (deleted, `sign` -1). */
  add(job: CountedJob, sign: 1 | -1 = 1): void {
    this.apply(job.endpointId, job.status, job.lowPriority, sign, sign * job.retries)
  }

  /** `n` jobs of one kind appeared or (negative) disappeared; `job.retries` is their sum. */
  bulk(job: CountedJob, n: number): void {
    this.apply(job.endpointId, job.status, job.lowPriority, n, Math.sign(n) * job.retries)
  }

  /** A job changed state or retries. */
  move(before: CountedJob, after: CountedJob): void {
    if (before.status === after.status && before.retries === after.retries) return
    this.add(before, -1)
    this.add(after, 1)
  }

  get(endpointId: string): Tally | undefined {
    return this.tallies.get(endpointId)
  }

  entries(): IterableIterator<[string, Tally]> {
    return this.tallies.entries()
  }

  private apply(endpointId: string, status: JobStatus, low: boolean, n: number, retried: number): void {
    let t = this.tallies.get(endpointId)
    if (!t)
      this.tallies.set(
        endpointId,
        (t = { inQueue: 0, inQueueLow: 0, inProgress: 0, completed: 0, failed: 0, retried: 0, total: 0 }),
      )
    t.total += n
    t.retried += retried
    if (status === 'IN_QUEUE') {
      t.inQueue += n
      if (low) t.inQueueLow += n
    } else if (status === 'IN_PROGRESS') t.inProgress += n
    else if (status === 'COMPLETED') t.completed += n
    else if (status === 'FAILED' || status === 'TIMED_OUT') t.failed += n
    if (t.total <= 0) this.tallies.delete(endpointId)
  }
}
