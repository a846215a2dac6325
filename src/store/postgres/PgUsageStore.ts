import { bucketEndAtOrAfter, bucketStart, splitSpan } from '../../domain/billing/buckets.js'
import { intervalPieces, USAGE_COMPONENTS, type UsageComponent, type UsageInterval, type UsageSubject } from '../../domain/billing/usage.js'
import type { DailyFilter, DailyGrouping, DailySum, UsageFilter, UsageStore } from '../UsageStore.js'
import { toInterval } from '../rows.js'
import { atomically, type PgQueryable } from './PgQueryable.js'

const COLUMN: Record<UsageComponent, string> = { gpu: 'gpu', cpu: 'cpu', disk: 'disk', fee: 'fee', standard: 'standard', highPerformance: 'high_performance', networking: 'networking' }
const INSERT = `INSERT INTO usage_intervals (account_id, product, component, resource_id, part_id, gpu_type_id, quantity, price_micros, period_ms, started_at, ended_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`

/** The usage ledger in PostgreSQL (migration 050); the same tables and roll-up as SqliteUsageStore. */
export class PgUsageStore implements UsageStore {
  constructor(private readonly q: PgQueryable) {}

  async open(subject: UsageSubject, at: number): Promise<UsageInterval> {
    const { rows } = await this.q.query<{ id: number }>(INSERT, [...subjectValues(subject), at, null])
    return { ...subject, id: rows[0].id, startedAt: at, endedAt: null }
  }

  async close(ids: readonly number[], at: number): Promise<void> {
    if (ids.length === 0) return
    await atomically(this.q, async (q) => {
      // One statement closes them all; only the rows it changed (not closed before) are rolled up.
      const { rows } = await q.query('UPDATE usage_intervals SET ended_at = greatest(started_at, $1) WHERE id = ANY($2::bigint[]) AND ended_at IS NULL RETURNING *', [at, ids])
      for (const r of rows.map(toInterval).sort((a, b) => a.id - b.id)) await rollUp(q, r)
    })
  }

  async insertClosed(intervals: ReadonlyArray<UsageSubject & { startedAt: number; endedAt: number }>): Promise<void> {
    await atomically(this.q, async (q) => {
      for (const i of intervals) {
        const { rows } = await q.query<{ id: number }>(INSERT, [...subjectValues(i), i.startedAt, i.endedAt])
        await rollUp(q, { ...i, id: rows[0].id })
      }
    })
  }

  async listOpen(): Promise<UsageInterval[]> {
    return (await this.q.query('SELECT * FROM usage_intervals WHERE ended_at IS NULL ORDER BY started_at, id')).rows.map(toInterval)
  }

  async listOverlapping(filter: UsageFilter, from: number, to: number): Promise<UsageInterval[]> {
    const closed = conditions(filter, [from, to])
    const open = conditions(filter, [to])
    const a = await this.q.query(`SELECT * FROM usage_intervals WHERE ended_at IS NOT NULL AND ended_at > $1 AND started_at < $2${closed.where} ORDER BY started_at, id`, closed.values)
    const b = await this.q.query(`SELECT * FROM usage_intervals WHERE ended_at IS NULL AND started_at < $1${open.where} ORDER BY started_at, id`, open.values)
    return [...a.rows, ...b.rows].map(toInterval)
  }

  async sumDaily(filter: DailyFilter, from: number, to: number, g: DailyGrouping): Promise<DailySum[]> {
    // Sums not by resource (nor filtered by one) read the smaller per-GPU-type roll-up.
    const table = g.by.includes('resourceId') || filter.resourceId !== undefined ? 'usage_daily' : 'usage_daily_gpu'
    const { where, values } = conditions(filter, [from, to])
    const keys = ['product', ...g.by.map((c) => GROUP_COLUMN[c])].join(', ')
    const { rows } = await this.q.query<Record<string, string | number>>(
      `SELECT ${BUCKET[g.size]} AS bucket, ${keys}, ${USAGE_COMPONENTS.map((c) => `sum(${COLUMN[c]}) AS ${COLUMN[c]}`).join(', ')}
       FROM ${table} WHERE day >= $1 AND day < $2${where} GROUP BY 1, ${keys} ORDER BY 1, ${keys}`,
      values,
    )
    return rows.map((r) => ({
      bucket: Number(r.bucket),
      product: r.product as DailySum['product'],
      accountId: (r.account_id as string | undefined) ?? null,
      resourceId: (r.resource_id as string | undefined) ?? null,
      gpuTypeId: (r.gpu_type_id as string | undefined) || null,
      amounts: { gpu: Number(r.gpu), cpu: Number(r.cpu), disk: Number(r.disk), fee: Number(r.fee), standard: Number(r.standard), highPerformance: Number(r.high_performance), networking: Number(r.networking) },
    }))
  }

  async resourcesWithUse(filter: DailyFilter, from: number, to: number): Promise<string[]> {
    const days = async (a: number, b: number): Promise<string[]> => {
      if (a >= b) return []
      const { where, values } = conditions(filter, [a, b])
      return (await this.q.query<{ resource_id: string }>(`SELECT DISTINCT resource_id FROM usage_daily WHERE day >= $1 AND day < $2${where}`, values)).rows.map((r) => r.resource_id)
    }
    // Whole months from the monthly presence rows (unless filtered by GPU type, which they do not know);
    // the partial months at either end from the daily rows.
    const firstMonth = bucketEndAtOrAfter(from, 'month')
    const lastMonth = bucketStart(to, 'month')
    if (filter.gpuTypeId !== undefined || firstMonth >= lastMonth) return days(from, to)
    const { where, values } = conditions({ ...filter, gpuTypeId: undefined }, [firstMonth, lastMonth])
    const months = (await this.q.query<{ resource_id: string }>(`SELECT DISTINCT resource_id FROM usage_monthly_resources WHERE month >= $1 AND month < $2${where}`, values)).rows.map((r) => r.resource_id)
    return [...new Set([...months, ...(await days(from, firstMonth)), ...(await days(lastMonth, to))])]
  }

  async lastAlive(): Promise<number | null> {
    const { rows } = await this.q.query<{ at: number }>(`SELECT at FROM usage_marks WHERE key = 'alive'`)
    return rows[0]?.at ?? null
  }

  async noteAlive(at: number): Promise<void> {
    await this.q.query(`INSERT INTO usage_marks (key, at) VALUES ('alive', $1) ON CONFLICT (key) DO UPDATE SET at = excluded.at`, [at])
  }
}

/** Adds a closed interval's cost, split at UTC midnights, to the daily roll-ups and the monthly presence rows. */
async function rollUp(q: PgQueryable, i: UsageInterval): Promise<void> {
  const c = COLUMN[i.component]
  const gpuType = i.gpuTypeId ?? ''
  for (const p of intervalPieces(i, i.startedAt, i.endedAt!, 'day', i.endedAt!)) {
    await q.query(`INSERT INTO usage_daily (account_id, product, day, resource_id, gpu_type_id, ${c}) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (account_id, product, day, resource_id, gpu_type_id) DO UPDATE SET ${c} = usage_daily.${c} + excluded.${c}`, [
      i.accountId,
      i.product,
      p.bucket,
      i.resourceId,
      gpuType,
      p.amount,
    ])
    await q.query(`INSERT INTO usage_daily_gpu (account_id, product, day, gpu_type_id, ${c}) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (account_id, product, day, gpu_type_id) DO UPDATE SET ${c} = usage_daily_gpu.${c} + excluded.${c}`, [
      i.accountId,
      i.product,
      p.bucket,
      gpuType,
      p.amount,
    ])
  }
  for (const m of splitSpan(i.startedAt, i.endedAt!, 'month')) {
    await q.query('INSERT INTO usage_monthly_resources (account_id, product, month, resource_id) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING', [i.accountId, i.product, m.bucket, i.resourceId])
  }
}

function subjectValues(s: UsageSubject): unknown[] {
  return [s.accountId, s.product, s.component, s.resourceId, s.partId, s.gpuTypeId, s.quantity, s.priceMicros, s.periodMs]
}

const GROUP_COLUMN = { accountId: 'account_id', resourceId: 'resource_id', gpuTypeId: 'gpu_type_id' } as const

/** The bucket of a roll-up day (epoch ms of a UTC midnight), in SQL: weeks start on Monday (1970-01-01 was a Thursday). */
const BUCKET: Record<DailyGrouping['size'], string> = {
  day: 'day',
  week: 'day - ((day / 86400000 + 3) % 7) * 86400000',
  month: `(extract(epoch FROM date_trunc('month', to_timestamp(day / 1000) AT TIME ZONE 'UTC')) * 1000)::bigint`,
  year: `(extract(epoch FROM date_trunc('year', to_timestamp(day / 1000) AT TIME ZONE 'UTC')) * 1000)::bigint`,
}

/** SQL conditions for a filter, numbered after `values` (which it extends); products inlined from a closed set. */
function conditions(f: UsageFilter | DailyFilter, values: unknown[]): { where: string; values: unknown[] } {
  const out = [...values]
  let where = ''
  if (f.accountId !== undefined) where += ` AND account_id = $${out.push(f.accountId)}`
  where += ` AND product IN (${f.products.map((p) => `'${p.replace(/[^a-z]/g, '')}'`).join(', ')})`
  if (f.resourceId !== undefined) where += ` AND resource_id = $${out.push(f.resourceId)}`
  if ('partId' in f && f.partId !== undefined) where += ` AND part_id = $${out.push(f.partId)}`
  if (f.gpuTypeId !== undefined) where += ` AND gpu_type_id = $${out.push(f.gpuTypeId)}`
  return { where, values: out }
}

