import type { JobStatus } from '../contract/job.js'
import { jsonText, RawJson } from '../domain/RawJson.js'
import type { JobRecord, TakenJob } from './JobStore.js'
import type { UsageInterval } from '../domain/billing/usage.js'
import type { WorkerRecord, WorkerState } from './WorkerStore.js'

/*
 * Row -> record mappings of the jobs and workers tables, the same in both adapters (same columns, same JSON-as-text
 * storage; SQLite's 0/1 and PostgreSQL's booleans both read through Boolean()). Plain data only: no driver type.
 */

type Row = Record<string, unknown>

/** The jobs table's column of each JobPatch field. */
export const COLUMNS: Record<string, string> = {
  status: 'status',
  startedAt: 'started_at',
  completedAt: 'completed_at',
  expiresAt: 'expires_at',
  retainUntil: 'retain_until',
  workerId: 'worker_id',
  error: 'error',
  retries: 'retries',
  createdAt: 'created_at',
  ttlMs: 'ttl_ms',
  output: 'output',
  progress: 'progress',
}
/**
 * Every column of jobs but `input`: only take and get({ input: true }) read it; every other read leaves it
 * in the table, so a 20 MB input is not copied out on each status check or state move.
 */
export const NO_INPUT = `id, endpoint_id, account_id, seq, status, webhook, policy, s3_config, sync, low_priority, execution_timeout_ms, ttl_ms,
  retention_ms, created_at, started_at, completed_at, expires_at, retain_until, worker_id, output, error, retries, progress, stream_cursor`
/** JobPatch fields stored as JSON text. */
export const JSON_FIELDS = new Set(['output', 'progress'])

/** A JSON column's text, or NULL for a field not set. */
export function json(v: unknown): string | null {
  return v === undefined ? null : jsonText(v)
}

function parse(v: unknown): unknown {
  return v === null || v === undefined ? undefined : JSON.parse(v as string)
}

/** A result as stored, not parsed: it is only sent on (status, webhook), so it stays text (see RawJson). */
function raw(v: unknown): RawJson | undefined {
  return v === null || v === undefined ? undefined : new RawJson(v as string | Buffer)
}

/** A row of the jobs table (the input column only where the query read it) as a record. */
export function toJob(r: Row): JobRecord {
  return {
    id: r.id as string,
    endpointId: r.endpoint_id as string,
    accountId: r.account_id as string,
    status: r.status as JobStatus,
    // Read by take only (see NO_INPUT), and kept as the text it was stored as (see RawJson).
    input: r.input === undefined ? undefined : new RawJson(r.input as string | Buffer),
    webhook: (r.webhook as string | null) ?? null,
    policy: (parse(r.policy) as Record<string, unknown> | undefined) ?? null,
    s3Config: (parse(r.s3_config) as Record<string, unknown> | undefined) ?? null,
    sync: Boolean(r.sync),
    lowPriority: Boolean(r.low_priority),
    executionTimeoutMs: r.execution_timeout_ms as number,
    ttlMs: r.ttl_ms as number,
    retentionMs: r.retention_ms as number,
    createdAt: r.created_at as number,
    startedAt: (r.started_at as number | null) ?? null,
    completedAt: (r.completed_at as number | null) ?? null,
    expiresAt: r.expires_at as number,
    retainUntil: (r.retain_until as number | null) ?? null,
    workerId: (r.worker_id as string | null) ?? null,
    output: raw(r.output),
    error: (r.error as string | null) ?? null,
    retries: r.retries as number,
    progress: raw(r.progress),
  }
}

/** The columns a take returns (see TakenJob), with what orders them (RETURNING does not keep the subquery's order). */
export const TAKEN_COLUMNS = 'id, seq, low_priority, retries, webhook, policy, s3_config'

/** A row of TAKEN_COLUMNS (and input) as the job its worker receives. */
export function toTaken(r: Row): TakenJob {
  return {
    id: r.id as string,
    input: new RawJson(r.input as string | Buffer),
    webhook: (r.webhook as string | null) ?? null,
    policy: (parse(r.policy) as Record<string, unknown> | undefined) ?? null,
    s3Config: (parse(r.s3_config) as Record<string, unknown> | undefined) ?? null,
  }
}

/** The workers table's column of each field a worker update may set (every field but its identity; a new field must be named). */
const workerColumns: Record<keyof Omit<WorkerRecord, 'id' | 'endpointId' | 'accountId'>, string> = {
  state: 'state',
  tokenHash: 'token_hash',
  version: 'version',
  image: 'image',
  gpuTypeId: 'gpu_type_id',
  gpuCount: 'gpu_count',
  dataCenterId: 'data_center_id',
  hostId: 'host_id',
  runtimeRef: 'runtime_ref',
  createdAt: 'created_at',
  startedAt: 'started_at',
  stoppedAt: 'stopped_at',
  lastError: 'last_error',
}
export const WORKER_COLUMNS: Readonly<Record<string, string>> = workerColumns

/** A row of the workers table as a record. */
export function toWorker(r: Record<string, unknown>): WorkerRecord {
  return {
    id: r.id as string,
    endpointId: r.endpoint_id as string,
    accountId: r.account_id as string,
    state: r.state as WorkerState,
    tokenHash: r.token_hash as string,
    version: r.version as number,
    image: r.image as string,
    gpuTypeId: (r.gpu_type_id as string | null) ?? null,
    gpuCount: r.gpu_count as number,
    dataCenterId: (r.data_center_id as string | null) ?? null,
    hostId: (r.host_id as string | null) ?? null,
    runtimeRef: (r.runtime_ref as string | null) ?? null,
    createdAt: r.created_at as number,
    startedAt: (r.started_at as number | null) ?? null,
    stoppedAt: (r.stopped_at as number | null) ?? null,
    lastError: (r.last_error as string | null) ?? null,
  }
}

/** A row of the usage_intervals table as a record. */
export function toInterval(row: unknown): UsageInterval {
  const r = row as Row
  return {
    id: r.id as number,
    accountId: r.account_id as string,
    product: r.product as UsageInterval['product'],
    component: r.component as UsageInterval['component'],
    resourceId: r.resource_id as string,
    partId: r.part_id as string | null,
    gpuTypeId: r.gpu_type_id as string | null,
    quantity: r.quantity as number,
    priceMicros: r.price_micros as number,
    periodMs: r.period_ms as number,
    startedAt: r.started_at as number,
    endedAt: r.ended_at as number | null,
  }
}
