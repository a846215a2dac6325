import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { JobRecord } from '../src/store/JobStore.js'
import { SqliteStore } from '../src/store/sqlite/SqliteStore.js'
import { job as contractJob } from './contracts/store.js'

/** A queued job of endpoint `ep1` (the contract suite's record, with a fixed id). */
const job = (id: string, over: Partial<JobRecord> = {}): JobRecord => contractJob('ep1', { id, input: { id }, ...over })

/** The counts as the table holds them, to compare with the store's in-memory ones. */
function recount(file: string, endpointId: string) {
  const db = new Database(file, { readonly: true })
  try {
    const rows = db
      .prepare(
        'SELECT status, low_priority AS low, count(*) AS n, coalesce(sum(retries), 0) AS r FROM jobs WHERE endpoint_id = ? GROUP BY status, low_priority',
      )
      .all(endpointId) as Array<{ status: string; low: number; n: number; r: number }>
    const c = { inQueue: 0, inQueueLow: 0, inProgress: 0, completed: 0, failed: 0, retried: 0 }
    for (const r of rows) {
      c.retried += r.r
      if (r.status === 'IN_QUEUE') {
        c.inQueue += r.n
        if (r.low) c.inQueueLow += r.n
      } else if (r.status === 'IN_PROGRESS') c.inProgress += r.n
      else if (r.status === 'COMPLETED') c.completed += r.n
      else if (r.status === 'FAILED' || r.status === 'TIMED_OUT') c.failed += r.n
    }
    const oldest = db
      .prepare(
        `SELECT min(created_at) AS t FROM jobs WHERE endpoint_id = ? AND status = 'IN_QUEUE' AND low_priority = 0`,
      )
      .get(endpointId) as { t: number | null }
    return { ...c, oldestQueuedAt: oldest.t }
  } finally {
    db.close()
  }
}

describe('SQLite job store: group commit and counts', () => {
  let dir: string
  let file: string
  let store: SqliteStore
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-jobstore-'))
    file = join(dir, 'hangar.db')
    store = new SqliteStore(file)
  })
  afterEach(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('commits every write before its promise resolves, writes of one turn together', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `j${i}`)
    await Promise.all(ids.map((id, i) => store.jobs.insert(job(id, { createdAt: 1_000 + i }))))
    // Another connection sees them: they are committed, not only in this connection's open transaction.
    expect(recount(file, 'ep1').inQueue).toBe(50)
  })

  it('fails a write alone: the others of the same commit stand', async () => {
    const results = await Promise.allSettled([
      store.jobs.insert(job('a')),
      store.jobs.insert(job('a')),
      store.jobs.insert(job('b')),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect((results[1] as PromiseRejectedResult).reason.message).toMatch(/UNIQUE constraint failed: jobs.id/)
    expect(recount(file, 'ep1').inQueue).toBe(2)
  })

  it('finds a job for a take asked while its insert waits for the commit, and commits both together', async () => {
    expect(store.jobs.writesInOrder).toBe(true)
    const inserted = store.jobs.insert(job('a'))
    const taken = store.jobs.take('ep1', 'w1', 1, 2_000)
    expect((await taken).map((j) => j.id)).toEqual(['a'])
    expect(await store.jobs.get('a')).toMatchObject({ status: 'IN_PROGRESS', workerId: 'w1' })
    await inserted
    expect(recount(file, 'ep1')).toMatchObject({ inQueue: 0, inProgress: 1 })
    // Nothing waits now: a take finds nothing, and the counts stand.
    expect(await store.jobs.take('ep1', 'w2', 1, 2_000)).toEqual([])
    expect(await store.jobs.counts('ep1')).toEqual(recount(file, 'ep1'))
  })

  it('keeps /health and scaler counts equal to a recount through every kind of move', async () => {
    const { jobs } = store
    for (let i = 0; i < 12; i++) await jobs.insert(job(`j${i}`, { createdAt: 1_000 + i, lowPriority: i % 4 === 0 }))
    await jobs.insert(job('other', { endpointId: 'ep2' }))
    const taken = await jobs.take('ep1', 'w1', 5, 2_000)
    expect(taken.map((j) => j.id)).toEqual(['j1', 'j2', 'j3', 'j5', 'j6'])
    await jobs.transition(
      'j1',
      ['IN_PROGRESS'],
      { status: 'COMPLETED', output: { ok: true }, completedAt: 3_000, retainFrom: 3_000 },
      'w1',
    )
    await jobs.transition('j2', ['IN_PROGRESS'], { status: 'FAILED', error: 'boom', completedAt: 3_000 }, 'w1')
    // Lost its worker: back to the queue with a retry counted (the source state is looked up).
    await jobs.transition(
      'j3',
      ['IN_PROGRESS'],
      { status: 'IN_QUEUE', workerId: null, startedAt: null, retries: 1 },
      'w1',
    )
    // Cancel from either waiting or running state.
    await jobs.transition('j5', ['IN_QUEUE', 'IN_PROGRESS'], { status: 'CANCELLED', completedAt: 3_000 })
    await jobs.transition('j7', ['IN_QUEUE', 'IN_PROGRESS'], { status: 'CANCELLED', completedAt: 3_000 })
    // Retry: FAILED back to the queue, at its end.
    await jobs.transition('j2', ['FAILED', 'TIMED_OUT'], {
      status: 'IN_QUEUE',
      error: null,
      createdAt: 4_000,
      requeueAtEnd: true,
      clearStream: true,
    })
    // A move that does not apply changes nothing.
    expect(await jobs.transition('j1', ['IN_PROGRESS'], { status: 'TIMED_OUT' }, 'w1')).toBeUndefined()
    // A patch without a state change (the status ttl) leaves the counts.
    await jobs.transition('j8', ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'], {
      ttlMs: 20_000,
      expiresAt: 21_000,
    })
    await jobs.delete('j6')
    await jobs.delete('j9')
    expect(await jobs.delete('j9')).toBe(false)
    expect(await jobs.counts('ep1')).toEqual(recount(file, 'ep1'))
    expect((await jobs.activeEndpoints()).find((e) => e.endpointId === 'ep1')).toEqual({
      endpointId: 'ep1',
      ...recount(file, 'ep1'),
    })

    expect(await jobs.purgeQueued('ep1')).toBe(7)
    expect(await jobs.get('j0')).toBeUndefined()
    expect((await jobs.get('j1'))?.status).toBe('COMPLETED')
    expect(await jobs.counts('ep1')).toEqual(recount(file, 'ep1'))
    expect((await jobs.activeEndpoints()).map((e) => e.endpointId)).toEqual(['ep2'])
    expect(await jobs.counts('ep2')).toEqual(recount(file, 'ep2'))
  })

  it('counts what a previous run left in the file', async () => {
    for (let i = 0; i < 5; i++) await store.jobs.insert(job(`j${i}`, { createdAt: 1_000 + i, retries: i }))
    await store.jobs.take('ep1', 'w1', 2, 2_000)
    const before = await store.jobs.counts('ep1')
    await store.close()
    store = new SqliteStore(file)
    expect(await store.jobs.counts('ep1')).toEqual(before)
    expect(before).toEqual(recount(file, 'ep1'))
  })
})
