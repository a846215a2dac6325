import type { WorkerDoneBody } from '../contract/worker.js'
import type { Target, Transport } from './transport.js'

/**
 * The most results one job-done-batch request may carry: the contract's MAX_DONE_BATCH (a test keeps them
 * equal). Not imported from it: the SDK's run-time code stays inside src/worker, which is copied alone
 * into worker images, and loads nothing but node's own modules.
 */
export const MAX_DONE_BATCH = 256
/** A result whose JSON text is larger than this goes alone, through job-done. */
export const ALONE_BYTES = 1024 * 1024
/** At most this much JSON text in one job-done-batch request (the control plane takes up to 64 MB). */
const BATCH_BYTES = 8 * 1024 * 1024
/** Posts of a result before it is given up, as the Python SDK does (a failed batch is posted result by result). */
const ATTEMPTS = 3

export interface ResultPosterOptions {
  http: Transport
  /** The worker's key, sent bare in `authorization`. */
  key: string
  /** job-done of one job (RUNPOD_WEBHOOK_POST_OUTPUT filled in). */
  single: (jobId: string, isStream: boolean) => Target
  /** job-done-batch (HANGAR_WEBHOOK_POST_OUTPUT_BATCH), or null to post every result alone. */
  batch: Target | null
}

interface Queued {
  jobId: string
  /** The job-done body's JSON text. */
  text: string
  bytes: number
  isStream: boolean
  delivered: () => void
}

/**
 * Posts finished jobs' results. With a job-done-batch URL, results are queued and sent together: a result
 * goes at once when no batch is in flight (after the current turn of the event loop, so results finishing
 * together leave together), and those finishing while one is in flight go in the next. No timer waits for
 * more. A large result goes alone through job-done; so does every result once job-done-batch answered
 * 404 (a control plane without it), and each result of a batch the control plane refused as a whole
 * (400, 413), so that only a faulty result fails its job, as job-done decides.
 */
export class ResultPoster {
  private queue: Queued[] = []
  private flushing = false
  private batchGone = false

  constructor(private readonly o: ResultPosterOptions) {}

  /**
   * Posts a job's job-done body; resolves once the platform took it, or once the attempts are spent
   * (logged). The caller drops the results of jobs the platform stopped before they finished.
   */
  async post(jobId: string, body: WorkerDoneBody, isStream: boolean): Promise<void> {
    let text: string
    try {
      text = JSON.stringify(body)
    } catch (err) {
      return lost(jobId, err)
    }
    const bytes = Buffer.byteLength(text)
    if (!this.o.batch || this.batchGone || bytes > ALONE_BYTES) return this.alone(jobId, text, isStream)
    return new Promise<void>((delivered) => {
      this.queue.push({ jobId, text, bytes, isStream, delivered })
      if (this.flushing) return
      this.flushing = true
      setImmediate(() => void this.flush())
    })
  }

  private async flush(): Promise<void> {
    try {
      while (this.queue.length > 0) await this.send(this.next())
    } finally {
      this.flushing = false
    }
  }

  /**
   * The next batch off the queue: at most MAX_DONE_BATCH results and BATCH_BYTES of text. A result queued
   * is sent even if its job is aborted meanwhile: the job had finished (runJob drops results of jobs
   * stopped before they finished), and the worker stopping (SIGINT) must not lose results it holds; one
   * the platform stopped is answered `accepted: false`, as a single post would be.
   */
  private next(): Queued[] {
    const batch: Queued[] = []
    let bytes = 0
    let k = 0
    for (; k < this.queue.length && batch.length < MAX_DONE_BATCH; k++) {
      const q = this.queue[k]
      if (batch.length > 0 && bytes + q.bytes > BATCH_BYTES) break
      batch.push(q)
      bytes += q.bytes
    }
    this.queue.splice(0, k)
    return batch
  }

  private async send(batch: Queued[]): Promise<void> {
    if (batch.length === 0) return
    if (this.batchGone) return this.eachAlone(batch)
    // Each item is the job-done body with its job's id (and isStream, job-done's query parameter).
    const text = `[${batch.map((q) => `{"id":${JSON.stringify(q.jobId)}${q.isStream ? ',"isStream":true' : ''}${q.text === '{}' ? '' : ',' + q.text.slice(1, -1)}}`).join(',')}]`
    try {
      const res = await this.o.http.postText(this.o.batch!, this.o.key, text, 30_000)
      await res.drop()
      if (res.status >= 200 && res.status <= 299) return batch.forEach((q) => q.delivered())
      if (res.status === 404) this.batchGone = true
      if (res.status === 404 || res.status === 400 || res.status === 413) return this.eachAlone(batch)
    } catch {
      // Unreachable or timed out: retried below.
    }
    // A failed batch is retried result by result (each up to ATTEMPTS times, as a single post is), off the
    // queue: results finishing meanwhile are not held behind its pauses and timeouts. A result the batch
    // did apply is answered `accepted: false` the second time, and nothing changes.
    void this.eachAlone(batch)
  }

  private async eachAlone(batch: Queued[]): Promise<void> {
    await Promise.all(
      batch.map(async (q) => {
        await this.alone(q.jobId, q.text, q.isStream)
        q.delivered()
      }),
    )
  }

  /** Posts one result through job-done, up to ATTEMPTS times. */
  private async alone(jobId: string, text: string, isStream: boolean): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await this.o.http.postText(this.o.single(jobId, isStream), this.o.key, text, 30_000)
        await res.drop()
        if (res.status >= 200 && res.status <= 299) return
        throw new Error(`job-done answered HTTP ${res.status}`)
      } catch (err) {
        if (attempt >= ATTEMPTS) return lost(jobId, err)
        await pause(500 * attempt)
      }
    }
  }
}

function lost(jobId: string, err: unknown): void {
  console.error(`job ${jobId}: could not post the result: ${err instanceof Error ? err.message : String(err)}`)
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
