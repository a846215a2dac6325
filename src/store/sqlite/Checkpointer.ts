import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'

// CommonJS, run as an eval'd worker so it works from src (tests) and dist alike without a second file.
const WORKER = `
const { workerData, parentPort } = require('node:worker_threads')
const Database = require(workerData.module)
const db = new Database(workerData.file, { fileMustExist: true })
db.pragma('synchronous = NORMAL')
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)')
  } catch {
    // busy (another checkpoint runs): the next tick tries again
  }
}, workerData.intervalMs)
parentPort.once('message', () => {
  clearInterval(timer)
  db.close()
  parentPort.postMessage('closed')
})
`

/**
 * Checkpoints the WAL from a worker thread with its own connection. With synchronous=NORMAL a commit
 * only appends to the WAL; the fsyncs happen at checkpoints, which SQLite otherwise runs inside the
 * commit that crosses wal_autocheckpoint, on the event loop. Measured on a 2-core VM: 27 -> 14 µs per
 * insert in batches of 32. Durability is unchanged (a commit is in the WAL file before it returns; a
 * PASSIVE checkpoint never blocks the writer).
 */
export class Checkpointer {
  private readonly worker: Worker

  constructor(file: string, intervalMs = 200) {
    const module = createRequire(import.meta.url).resolve('better-sqlite3')
    this.worker = new Worker(WORKER, { eval: true, workerData: { file, module, intervalMs } })
    this.worker.unref()
    // A checkpointer that dies leaves checkpoints to the writer's own autocheckpoint (kept as a backstop).
    this.worker.on('error', () => {})
  }

  /** Closes the thread's connection (before the writer's, so the writer's close is the last and cleans up the WAL). */
  async stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => {
      this.worker.once('message', () => resolve())
      this.worker.once('exit', () => resolve())
    })
    this.worker.postMessage('stop')
    await closed
    await this.worker.terminate()
  }
}
