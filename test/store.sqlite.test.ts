import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteStore } from '../src/store/sqlite/SqliteStore.js'
import { storeContract } from './contracts/store.js'

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
