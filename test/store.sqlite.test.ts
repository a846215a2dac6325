import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteStore } from '../src/store/sqlite/SqliteStore.js'
import { describe, expect, it } from 'vitest'
import { endpoint, job, storeContract } from './contracts/store.js'

storeContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-store-'))
  const store = new SqliteStore(join(dir, 'hangar.db'))
  return {
    store,
    async dispose() {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
})

describe('sqlite job store: queue positions', () => {
  it('continues after the highest position in the file when reopened, so the queue keeps its order', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hangar-store-'))
    try {
      const file = join(dir, 'hangar.db')
      let store = new SqliteStore(file)
      const first = [job('ep'), job('ep')]
      for (const j of first) await store.jobs.insert(j)
      // A requeue to the back takes a new position too.
      const [taken] = await store.jobs.take('ep', 'w1', 1, 2_000)
      await store.jobs.transition(
        taken.id,
        ['IN_PROGRESS'],
        { status: 'IN_QUEUE', workerId: null, requeueAtEnd: true, retries: 1 },
        'w1',
      )
      await store.close()
      store = new SqliteStore(file)
      const later = job('ep')
      await store.jobs.insert(later)
      expect((await store.jobs.take('ep', 'w2', 3, 2_000)).map((j) => j.id)).toEqual([
        first[1].id,
        first[0].id,
        later.id,
      ])
      await store.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('sqlite endpoint documents: kept parsed in memory', () => {
  it('answers reads from memory yet never stale: after an update, a delete and a rolled-back transaction', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hangar-store-'))
    const store = new SqliteStore(join(dir, 'hangar.db'))
    try {
      await store.accounts.insert({
        id: 'acc',
        name: 'acc',
        rateLimitExempt: false,
        createdAt: '2026-01-01T00:00:00.000Z',
      })
      const ep = endpoint('acc', { id: 'ep1', name: 'a' })
      await store.endpoints.insert(ep)
      const first = await store.endpoints.get('ep1')
      expect(first).toMatchObject({ name: 'a' })
      // The same object each time, frozen: no caller can change what the next one reads.
      expect(await store.endpoints.get('ep1')).toBe(first)
      expect(Object.isFrozen(first)).toBe(true)
      await store.endpoints.update({ ...ep, name: 'b', version: 2 })
      expect(await store.endpoints.get('ep1')).toMatchObject({ name: 'b', version: 2 })
      await expect(
        store.transaction(async (tx) => {
          await tx.endpoints.update({ ...ep, name: 'c', version: 3 })
          expect(await tx.endpoints.get('ep1')).toMatchObject({ name: 'c' })
          throw new Error('undo')
        }),
      ).rejects.toThrow('undo')
      expect(await store.endpoints.get('ep1')).toMatchObject({ name: 'b', version: 2 })
      await store.endpoints.delete('ep1')
      expect(await store.endpoints.get('ep1')).toBeUndefined()
    } finally {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
