import { stringifyWithRaw } from '../../domain/RawJson.js'
import type { WebhookAttempt, WebhookDelivery, WebhookStore } from '../WebhookStore.js'
import type { PgQueryable } from './PgQueryable.js'

/** Webhook deliveries in PostgreSQL; attempts are a jsonb array, appended to in one statement. */
export class PgWebhookStore implements WebhookStore {
  constructor(private readonly q: PgQueryable) {}

  async insert(d: WebhookDelivery): Promise<void> {
    await insertDelivery(this.q, d)
  }

  async due(now: number, limit: number): Promise<WebhookDelivery[]> {
    const { rows } = await this.q.query(
      `SELECT * FROM webhook_deliveries WHERE state = 'PENDING' AND next_attempt_at <= $1 ORDER BY next_attempt_at, created_at LIMIT $2`,
      [now, limit],
    )
    return rows.map(toDelivery)
  }

  async nextDueAt(): Promise<number | null> {
    const { rows } = await this.q.query<{ t: number | null }>(
      `SELECT min(next_attempt_at) AS t FROM webhook_deliveries WHERE state = 'PENDING'`,
    )
    return rows[0].t
  }

  async recordAttempt(
    id: string,
    attempt: WebhookAttempt,
    next: { state: WebhookDelivery['state']; nextAttemptAt: number | null },
  ): Promise<void> {
    await this.q.query(
      'UPDATE webhook_deliveries SET attempts = attempts || jsonb_build_array($2::jsonb), state = $3, next_attempt_at = $4 WHERE id = $1',
      [id, JSON.stringify(attempt), next.state, next.nextAttemptAt],
    )
  }

  async listForJob(jobId: string): Promise<WebhookDelivery[]> {
    return (
      await this.q.query('SELECT * FROM webhook_deliveries WHERE job_id = $1 ORDER BY created_at, id', [jobId])
    ).rows.map(toDelivery)
  }
}

/** Records a delivery on `q` (the job store calls it inside the transaction of the job's move). */
export async function insertDelivery(q: PgQueryable, d: WebhookDelivery): Promise<void> {
  await q.query(
    'INSERT INTO webhook_deliveries (id, job_id, url, payload, state, attempts, next_attempt_at, created_at, endpoint_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)',
    [
      d.id,
      d.jobId,
      d.url,
      stringifyWithRaw(d.payload),
      d.state,
      JSON.stringify(d.attempts),
      d.nextAttemptAt,
      d.createdAt,
      d.endpointId ?? null,
    ],
  )
}

function toDelivery(r: Record<string, unknown>): WebhookDelivery {
  return {
    id: r.id as string,
    jobId: r.job_id as string,
    ...(r.endpoint_id != null ? { endpointId: r.endpoint_id as string } : {}),
    url: r.url as string,
    payload: JSON.parse(r.payload as string),
    state: r.state as WebhookDelivery['state'],
    // jsonb: the driver parses it.
    attempts: r.attempts as WebhookAttempt[],
    nextAttemptAt: (r.next_attempt_at as number | null) ?? null,
    createdAt: r.created_at as number,
  }
}
