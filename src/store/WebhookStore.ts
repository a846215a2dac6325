/** One attempt to deliver a webhook. */
export interface WebhookAttempt {
  at: number
  /** HTTP status of the answer, or null when none came. */
  statusCode: number | null
  error: string | null
  durationMs: number
}

/** A webhook notification owed to a job's `webhook` URL. */
export interface WebhookDelivery {
  id: string
  jobId: string
  /** The job's endpoint, whose secret signs each attempt; absent on deliveries recorded before signing. */
  endpointId?: string
  url: string
  /** JSON body to POST. */
  payload: unknown
  state: 'PENDING' | 'DELIVERED' | 'FAILED'
  attempts: WebhookAttempt[]
  /** When the next attempt is due (PENDING only). */
  nextAttemptAt: number | null
  createdAt: number
}

/** Durable webhook deliveries: a restart resumes the pending ones. */
export interface WebhookStore {
  insert(delivery: WebhookDelivery): Promise<void>
  /** PENDING deliveries due at or before `now`, oldest first. */
  due(now: number, limit: number): Promise<WebhookDelivery[]>
  /** The earliest nextAttemptAt among PENDING deliveries, or null. */
  nextDueAt(): Promise<number | null>
  /** Records an attempt and the resulting state. */
  recordAttempt(
    id: string,
    attempt: WebhookAttempt,
    next: { state: WebhookDelivery['state']; nextAttemptAt: number | null },
  ): Promise<void>
  listForJob(jobId: string): Promise<WebhookDelivery[]>
}
