import type { JobStatus } from '../contract/job.js'

/** How a webhook attempt ended: delivered, failed and to be tried again, or failed for good. */
export type WebhookOutcome = 'delivered' | 'retry' | 'failed'

/**
 * Where services report events worth counting (served as Prometheus `/metrics`). Called on hot paths, so
 * every method must be cheap and must not throw; gauges (queue depth, workers by state) are not pushed
 * here but read when scraped.
 */
export interface Metrics {
  /**
   * A job reached a final status; `runMs` is null when it never started (cancelled or expired while
   * queued), `delayMs` (created to started) likewise.
   */
  jobFinished(endpointId: string, status: JobStatus, runMs: number | null, delayMs?: number | null): void
  /** A worker called in for the first time, `coldStartMs` after its start was asked of the runtime. */
  workerReady(endpointId: string, coldStartMs: number): void
  /** One webhook delivery attempt ended. */
  webhookAttempt(outcome: WebhookOutcome): void
}

/** Counts nothing (embedders and tests that do not scrape). */
export const noMetrics: Metrics = { jobFinished() {}, workerReady() {}, webhookAttempt() {} }

/** Reports every event to each of `all` (Prometheus and the endpoint metrics buckets). */
export function allMetrics(...all: Metrics[]): Metrics {
  return {
    jobFinished: (e, s, run, delay) => all.forEach((m) => m.jobFinished(e, s, run, delay)),
    workerReady: (e, ms) => all.forEach((m) => m.workerReady(e, ms)),
    webhookAttempt: (o) => all.forEach((m) => m.webhookAttempt(o)),
  }
}
