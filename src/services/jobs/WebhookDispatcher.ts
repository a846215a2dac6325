import type { ChangeFeed } from '../../replicas/ChangeFeed.js'
import { request } from 'undici'
import type { Clock } from '../../domain/clock.js'
import { newId } from '../../domain/ids.js'
import { jobStatusView } from '../../domain/jobs/jobView.js'
import { signWebhook } from '../../domain/jobs/webhookSignature.js'
import type { JobRecord } from '../../store/JobStore.js'
import type { Store } from '../../store/Store.js'
import type { WebhookDelivery } from '../../store/WebhookStore.js'
import type { WebhookQueue } from './JobLifecycle.js'
import type { Log } from '../log.js'
import type { Metrics } from '../Metrics.js'

/** The spec: one attempt plus up to 2 retries. */
export const WEBHOOK_ATTEMPTS = 3

export interface WebhookDispatcherOptions {
  store: Store
  clock: Clock
  log: Log
  /** The keys signing an endpoint's webhooks at `now` (WebhookSecrets); without it, deliveries go unsigned. */
  signingKeys?: (endpointId: string, now: number) => Promise<Buffer[]>
  /** Pause between attempts (the spec's 10 s). */
  retryDelayMs: number
  /** Limit of one attempt. */
  timeoutMs: number
  /** How many deliveries may be in flight at once. */
  concurrency?: number
  /** Counts attempts by outcome. */
  metrics?: Metrics
  /** Other control-plane processes: a delivery recorded there wakes this dispatcher (when it runs, on the leader). */
  feed?: ChangeFeed
}

/**
 * Delivers job webhooks off the job path: a finished job only records a delivery (durably, in the same
 * move as its final state); this loop POSTs the job's status object, retries a non-2xx answer up to
 * 2 more times `retryDelayMs` apart, and records every attempt. Pending deliveries resume after a restart.
 */
export class WebhookDispatcher implements WebhookQueue {
  private timer: NodeJS.Timeout | undefined
  private readonly inFlight = new Map<string, Promise<void>>()
  private started = false
  private pumping: Promise<void> | undefined
  private again = false

  constructor(private readonly o: WebhookDispatcherOptions) {
    o.feed?.on('webhooks', () => this.poke())
  }

  delivery(job: JobRecord): WebhookDelivery {
    const now = this.o.clock.now()
    return {
      id: newId('wh_'),
      jobId: job.id,
      endpointId: job.endpointId,
      url: job.webhook ?? '',
      payload: jobStatusView(job),
      state: 'PENDING',
      attempts: [],
      nextAttemptAt: now,
      createdAt: now,
    }
  }

  notify(): void {
    this.poke()
    this.o.feed?.publish('webhooks')
  }

  start(): void {
    this.started = true
    this.poke()
  }

  /** Stops starting attempts and waits for those in flight (each bounded by timeoutMs). */
  async stop(): Promise<void> {
    this.started = false
    clearTimeout(this.timer)
    await this.pumping
    await Promise.all(this.inFlight.values())
  }

  /** Looks for due deliveries now. */
  poke(): void {
    if (!this.started) return
    if (this.pumping) {
      this.again = true
      return
    }
    this.pumping = this.pump()
      .catch((err) => this.o.log.error({ err }, 'webhook dispatch failed'))
      .finally(() => {
        this.pumping = undefined
        if (this.again) {
          this.again = false
          this.poke()
        }
      })
  }

  private async pump(): Promise<void> {
    const { store, clock } = this.o
    const limit = this.o.concurrency ?? 16
    const due = await store.webhooks.due(clock.now(), limit * 2)
    for (const d of due) {
      if (this.inFlight.has(d.id) || this.inFlight.size >= limit) continue
      const p = this.attempt(d).finally(() => {
        this.inFlight.delete(d.id)
        this.poke()
      })
      this.inFlight.set(d.id, p)
    }
    await this.schedule()
  }

  /** Sleeps until the next pending delivery is due (real time; the store keeps clock times). */
  private async schedule(): Promise<void> {
    clearTimeout(this.timer)
    if (!this.started) return
    const next = await this.o.store.webhooks.nextDueAt()
    if (next === null) return
    const delay = Math.max(10, Math.min(60_000, next - this.o.clock.now()))
    this.timer = setTimeout(() => this.poke(), delay)
    this.timer.unref()
  }

  private async attempt(d: WebhookDelivery): Promise<void> {
    const { store, clock, log, retryDelayMs, timeoutMs } = this.o
    const started = Date.now()
    let statusCode: number | null = null
    let error: string | null = null
    try {
      const body = JSON.stringify(d.payload)
      // Standard Webhooks: receivers refuse a timestamp far from their own clock (5 minutes in the reference
      // libraries), so it is the wall-clock time of this attempt (a retry after a restart is signed afresh),
      // not the service clock or the delivery's creation.
      const timestamp = Math.floor(Date.now() / 1000)
      // webhook-id names the delivery, the same on every attempt and after a restart: delivery is at least
      // once (an attempt whose answer was lost is made again), so receivers drop ids they have seen.
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': 'hangar-webhook/1',
        'webhook-id': d.id,
        'webhook-timestamp': String(timestamp),
      }
      const keys =
        d.endpointId !== undefined && this.o.signingKeys ? await this.o.signingKeys(d.endpointId, clock.now()) : []
      if (keys.length > 0) headers['webhook-signature'] = signWebhook(keys, d.id, timestamp, body)
      const res = await request(d.url, {
        method: 'POST',
        headers,
        body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      })
      statusCode = res.statusCode
      await res.body.dump()
      // The spec asks receivers for 200; any 2xx is taken as received rather than sent again.
      if (statusCode < 200 || statusCode > 299) error = `answered HTTP ${statusCode}`
    } catch (err) {
      error = (err as Error).message || String(err)
    }
    const attempts = d.attempts.length + 1
    const now = clock.now()
    const next =
      error === null
        ? { state: 'DELIVERED' as const, nextAttemptAt: null }
        : attempts >= WEBHOOK_ATTEMPTS
          ? { state: 'FAILED' as const, nextAttemptAt: null }
          : { state: 'PENDING' as const, nextAttemptAt: now + retryDelayMs }
    await store.webhooks.recordAttempt(d.id, { at: now, statusCode, error, durationMs: Date.now() - started }, next)
    this.o.metrics?.webhookAttempt(
      next.state === 'DELIVERED' ? 'delivered' : next.state === 'FAILED' ? 'failed' : 'retry',
    )
    if (error)
      log.warn(
        { jobId: d.jobId, url: d.url, attempt: attempts, error },
        next.state === 'FAILED' ? 'webhook delivery failed' : 'webhook attempt failed',
      )
  }
}
