import { stringifyWithRaw } from '../../domain/RawJson.js'
import type Database from 'better-sqlite3'
import type { WebhookAttempt, WebhookDelivery, WebhookStore } from '../WebhookStore.js'

/** Webhook deliveries in SQLite; attempts are kept as a JSON array on the delivery. */
export class SqliteWebhookStore implements WebhookStore {
  private readonly s
  constructor(private readonly db: Database.Database) {
    this.s = {
      insert:
        db.prepare(`INSERT INTO webhook_deliveries (id, job_id, url, payload, state, attempts, next_attempt_at, created_at, endpoint_id)
        VALUES (@id, @jobId, @url, @payload, @state, @attempts, @nextAttemptAt, @createdAt, @endpointId)`),
      due: db.prepare(
        `SELECT * FROM webhook_deliveries WHERE state = 'PENDING' AND next_attempt_at <= ? ORDER BY next_attempt_at, created_at LIMIT ?`,
      ),
      nextDue: db.prepare(`SELECT min(next_attempt_at) AS t FROM webhook_deliveries WHERE state = 'PENDING'`),
      get: db.prepare('SELECT attempts FROM webhook_deliveries WHERE id = ?'),
      record: db.prepare(
        'UPDATE webhook_deliveries SET attempts = @attempts, state = @state, next_attempt_at = @nextAttemptAt WHERE id = @id',
      ),
      ofJob: db.prepare('SELECT * FROM webhook_deliveries WHERE job_id = ? ORDER BY created_at, id'),
    }
  }

  async insert(d: WebhookDelivery): Promise<void> {
    this.insertNow(d)
  }

  /** Synchronous insert, for the job store to record a delivery inside its own transaction. */
  insertNow(d: WebhookDelivery): void {
    this.s.insert.run({
      ...d,
      endpointId: d.endpointId ?? null,
      payload: stringifyWithRaw(d.payload),
      attempts: JSON.stringify(d.attempts),
    })
  }

  async due(now: number, limit: number): Promise<WebhookDelivery[]> {
    return (this.s.due.all(now, limit) as Array<Record<string, unknown>>).map(toDelivery)
  }

  async nextDueAt(): Promise<number | null> {
    return (this.s.nextDue.get() as { t: number | null }).t
  }

  async recordAttempt(
    id: string,
    attempt: WebhookAttempt,
    next: { state: WebhookDelivery['state']; nextAttemptAt: number | null },
  ): Promise<void> {
    this.db.transaction(() => {
      const row = this.s.get.get(id) as { attempts: string } | undefined
      if (!row) return
      const attempts = [...(JSON.parse(row.attempts) as WebhookAttempt[]), attempt]
      this.s.record.run({
        id,
        attempts: JSON.stringify(attempts),
        state: next.state,
        nextAttemptAt: next.nextAttemptAt,
      })
    })()
  }

  async listForJob(jobId: string): Promise<WebhookDelivery[]> {
    return (this.s.ofJob.all(jobId) as Array<Record<string, unknown>>).map(toDelivery)
  }
}

function toDelivery(r: Record<string, unknown>): WebhookDelivery {
  return {
    id: r.id as string,
    jobId: r.job_id as string,
    ...(r.endpoint_id != null ? { endpointId: r.endpoint_id as string } : {}),
    url: r.url as string,
    payload: JSON.parse(r.payload as string),
    state: r.state as WebhookDelivery['state'],
    attempts: JSON.parse(r.attempts as string),
    nextAttemptAt: (r.next_attempt_at as number | null) ?? null,
    createdAt: r.created_at as number,
  }
}
