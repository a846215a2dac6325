import { describe, expect, it } from 'vitest'
import type { JobStatus } from '../../contract/job.js'
import { afterWorkerLoss, isFinal, nextStatus, retentionMs, type JobEvent } from './jobState.js'

const STATUSES: JobStatus[] = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']

// Every (status, event) pair: the status it leads to, or null where the event does not apply.
const TABLE: Record<JobEvent, Partial<Record<JobStatus, JobStatus>>> = {
  complete: { IN_PROGRESS: 'COMPLETED' },
  fail: { IN_PROGRESS: 'FAILED' },
  timeout: { IN_PROGRESS: 'TIMED_OUT' },
  cancel: { IN_QUEUE: 'CANCELLED', IN_PROGRESS: 'CANCELLED' },
  retry: { FAILED: 'IN_QUEUE', TIMED_OUT: 'IN_QUEUE' },
  requeue: { IN_PROGRESS: 'IN_QUEUE' },
}

describe('job state machine', () => {
  for (const [event, moves] of Object.entries(TABLE) as Array<[JobEvent, Partial<Record<JobStatus, JobStatus>>]>) {
    for (const from of STATUSES) {
      const to = moves[from] ?? null
      it(`${event} from ${from} -> ${to ?? 'refused'}`, () => {
        expect(nextStatus(from, event)).toBe(to)
      })
    }
  }

  it('never moves a final job except by retry from FAILED or TIMED_OUT', () => {
    for (const from of STATUSES.filter(isFinal)) {
      const allowed = (Object.keys(TABLE) as JobEvent[]).filter((e) => nextStatus(from, e) !== null)
      expect(allowed).toEqual(from === 'FAILED' || from === 'TIMED_OUT' ? ['retry'] : [])
    }
  })

  it('requeues a job that lost its worker twice, fails it the third time', () => {
    expect([0, 1, 2].map(afterWorkerLoss)).toEqual(['requeue', 'requeue', 'fail'])
  })

  it('keeps results 30 min for /run, 1 min for /runsync, up to 5 min with wait', () => {
    expect(retentionMs(false)).toBe(1_800_000)
    expect(retentionMs(true)).toBe(60_000)
    expect(retentionMs(true, 1_000)).toBe(60_000)
    expect(retentionMs(true, 200_000)).toBe(200_000)
    expect(retentionMs(true, 300_000)).toBe(300_000)
  })
})
