import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteStore } from '../src/store/sqlite/SqliteStore.js'
import { describe, expect, it } from 'vitest'
import { job, storeContract } from './contracts/store.js'

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
      await store.jobs.transition(taken.id, ['IN_PROGRESS'], { status: 'IN_QUEUE', workerId: null, requeueAtEnd: true, retries: 1 }, 'w1')
      await store.close()
      store = new SqliteStore(file)
      const later = job('ep')
      await store.jobs.insert(later)
      expect((await store.jobs.take('ep', 'w2', 3, 2_000)).map((j) => j.id)).toEqual([first[1].id, first[0].id, later.id])
      await store.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
