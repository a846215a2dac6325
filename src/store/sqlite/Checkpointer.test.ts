import Database from 'better-sqlite3'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Checkpointer } from './Checkpointer.js'

/** mxFrame (frames in the WAL) and nBackfill (frames checkpointed) from the -shm file (walformat.html 2.2). */
function walState(file: string): { frames: number; backfilled: number } {
  const shm = readFileSync(`${file}-shm`)
  return { frames: shm.readUInt32LE(16), backfilled: shm.readUInt32LE(96) }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('Checkpointer', () => {
  const dirs: string[] = []
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
  })

  it('leaves a short WAL alone (its restart would sync on the next write) and checkpoints a long one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hangar-ckpt-'))
    dirs.push(dir)
    const file = join(dir, 'db.sqlite')
    const db = new Database(file)
    db.pragma('journal_mode = WAL')
    db.pragma('wal_autocheckpoint = 0')
    db.exec('CREATE TABLE t (x TEXT)')
    const insert = db.prepare('INSERT INTO t VALUES (?)')
    const checkpointer = new Checkpointer(file, 20, 50)
    try {
      for (let i = 0; i < 10; i++) insert.run('x'.repeat(100))
      await sleep(200)
      const short = walState(file)
      expect(short.frames).toBeGreaterThan(0)
      expect(short.frames).toBeLessThan(50)
      expect(short.backfilled).toBe(0)
      // Each row on a page of its own, about: well past 50 frames.
      for (let i = 0; i < 100; i++) insert.run('y'.repeat(3000))
      const long = walState(file).frames
      expect(long).toBeGreaterThanOrEqual(50)
      for (let i = 0; i < 50 && walState(file).backfilled < long; i++) await sleep(20)
      expect(walState(file).backfilled).toBe(long)
    } finally {
      await checkpointer.stop()
      db.close()
    }
  })
})
