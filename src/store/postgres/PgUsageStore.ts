import type { BucketSize } from '../../domain/billing/buckets.js'
import { grainOf, grainSpans, rollupRows, type RollupRow } from '../../domain/billing/rollup.js'
import { USAGE_COMPONENTS, type UsageInterval, type UsageSubject } from '../../domain/billing/usage.js'
import type { RollupFilter, RollupGrouping, RollupSum, UsageFilter, UsageStore } from '../UsageStore.js'
import { AMOUNT_COLUMN as COLUMN, AMOUNT_COLUMNS as AMOUNTS, rollupRead } from '../rollupRead.js'
import { toInterval } from '../rows.js'
import { atomically, type PgQueryable } from './PgQueryable.js'

const INSERT = `INSERT INTO usage_intervals (account_id, product, component, resource_id, part_id, gpu_type_id, quantity, price_micros, period_ms, started_at, ended_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id`

/** The usage ledger in PostgreSQL (migrations 050 and 150); the same tables and roll-ups as SqliteUsageStore. */
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
      const { rows } = await q.query(
        'UPDATE usage_intervals SET ended_at = greatest(started_at, $1) WHERE id = ANY($2::bigint[]) AND ended_at IS NULL RETURNING *',
        [at, ids],
      )
      await rollUp(q, rows.map(toInterval) as Array<UsageInterval & { endedAt: number }>)
    })
  }

  async insertClosed(intervals: ReadonlyArray<UsageSubject & { startedAt: number; endedAt: number }>): Promise<void> {
    await atomically(this.q, async (q) => {
      const inserted: Array<UsageInterval & { endedAt: number }> = []
      for (const i of intervals)
        inserted.push({
          ...i,
          id: (await q.query<{ id: number }>(INSERT, [...subjectValues(i), i.startedAt, i.endedAt])).rows[0].id,
        })
      await rollUp(q, inserted)
    })
  }

  async listOpen(): Promise<UsageInterval[]> {
    return (
      await this.q.query('SELECT * FROM usage_intervals WHERE ended_at IS NULL ORDER BY started_at, id')
    ).rows.map(toInterval)
  }

  async listOverlapping(filter: UsageFilter, from: number, to: number): Promise<UsageInterval[]> {
    const closed = conditions(filter, [from, to])
    const open = conditions(filter, [to])
    const a = await this.q.query(
      `SELECT * FROM usage_intervals WHERE ended_at IS NOT NULL AND ended_at > $1 AND started_at < $2${closed.where} ORDER BY started_at, id`,
      closed.values,
    )
    const b = await this.q.query(
      `SELECT * FROM usage_intervals WHERE ended_at IS NULL AND started_at < $1${open.where} ORDER BY started_at, id`,
      open.values,
    )
    return [...a.rows, ...b.rows].map(toInterval)
  }

  async sumRollup(filter: RollupFilter, from: number, to: number, g: RollupGrouping): Promise<RollupSum[]> {
    const { table, keys, distinct } = rollupRead(filter, g)
    const { where, values } = conditions(filter, [grainOf(g.size), from, to])
    const range = `FROM ${table} WHERE grain = $1 AND bucket >= $2 AND bucket < $3${where}`
    const { rows } = await this.q.query<Record<string, string | number>>(
      distinct
        ? `SELECT bucket, ${keys}, ${AMOUNTS.join(', ')} ${range}`
        : `SELECT ${BUCKET[g.size]} AS bucket, ${keys}, ${AMOUNTS.map((c) => `sum(${c}) AS ${c}`).join(', ')} ${range} GROUP BY 1, ${keys}`,
      values,
    )
    return rows.map((r) => ({
      bucket: Number(r.bucket),
      product: r.product as RollupSum['product'],
      accountId: (r.account_id as string | undefined) ?? null,
      resourceId: (r.resource_id as string | undefined) ?? null,
      gpuTypeId: (r.gpu_type_id as string | undefined) || null,
      amounts: {
        gpu: Number(r.gpu),
        cpu: Number(r.cpu),
        disk: Number(r.disk),
        fee: Number(r.fee),
        standard: Number(r.standard),
        highPerformance: Number(r.high_performance),
        networking: Number(r.networking),
      },
    }))
  }

  async resourcesWithUse(
    filter: RollupFilter,
    from: number,
    to: number,
    opts: { costly?: boolean } = {},
  ): Promise<string[]> {
    // One range per grain span, OR-ed: a year is a few hundred rows per resource, whatever its grain.
    const spans = grainSpans(from, to)
    if (spans.length === 0) return []
    const values: unknown[] = []
    const ranges = spans.map(
      (s) =>
        `(grain = $${values.push(s.grain)} AND bucket >= $${values.push(s.from)} AND bucket < $${values.push(s.to)})`,
    )
    const { where, values: all } = conditions(filter, values)
    const cost = opts.costly ? ` AND ${AMOUNTS.join(' + ')} > 0` : ''
    const { rows } = await this.q.query<{ resource_id: string }>(
      `SELECT DISTINCT resource_id FROM usage_rollup WHERE (${ranges.join(' OR ')})${where}${cost}`,
      all,
    )
    return rows.map((r) => r.resource_id)
  }

  async lastAlive(): Promise<number | null> {
    const { rows } = await this.q.query<{ at: number }>(`SELECT at FROM usage_marks WHERE key = 'alive'`)
    return rows[0]?.at ?? null
  }

  async noteAlive(at: number): Promise<void> {
    await this.q.query(
      `INSERT INTO usage_marks (key, at) VALUES ('alive', $1) ON CONFLICT (key) DO UPDATE SET at = excluded.at`,
      [at],
    )
  }
}

/**
 * Adds closed intervals' cost to the roll-ups (see rollupRows), one statement per table; rows in key order,
 * so that two writers adding to the same rows lock them in the same order.
 */
async function rollUp(q: PgQueryable, intervals: ReadonlyArray<UsageInterval & { endedAt: number }>): Promise<void> {
  const rows = rollupRows(intervals).sort(byKey)
  await upsert(
    q,
    'usage_rollup',
    rows.filter((r) => r.resourceId !== null),
  )
  await upsert(
    q,
    'usage_rollup_gpu',
    rows.filter((r) => r.resourceId === null),
  )
}

type Column = [name: string, type: 'text' | 'bigint', value: (r: RollupRow) => unknown]

async function upsert(q: PgQueryable, table: 'usage_rollup' | 'usage_rollup_gpu', rows: RollupRow[]): Promise<void> {
  if (rows.length === 0) return
  const keys: Column[] = [
    ['account_id', 'text', (r) => r.accountId],
    ['product', 'text', (r) => r.product],
    ['grain', 'text', (r) => r.grain],
    ['bucket', 'bigint', (r) => r.bucket],
    ...(table === 'usage_rollup' ? [['resource_id', 'text', (r: RollupRow) => r.resourceId] as Column] : []),
    ['gpu_type_id', 'text', (r) => r.gpuTypeId],
  ]
  const columns = [...keys, ...USAGE_COMPONENTS.map((c): Column => [COLUMN[c], 'bigint', (r) => r.amounts[c]])]
  await q.query(
    `INSERT INTO ${table} (${columns.map(([name]) => name).join(', ')})
     SELECT * FROM unnest(${columns.map(([, type], n) => `$${n + 1}::${type}[]`).join(', ')})
     ON CONFLICT (${keys.map(([name]) => name).join(', ')}) DO UPDATE SET ${AMOUNTS.map((c) => `${c} = ${table}.${c} + excluded.${c}`).join(', ')}`,
    columns.map(([, , value]) => rows.map(value)),
  )
}

function byKey(a: RollupRow, b: RollupRow): number {
  for (const [x, y] of [
    [a.accountId, b.accountId],
    [a.product, b.product],
    [a.grain, b.grain],
    [a.bucket, b.bucket],
    [a.resourceId ?? '', b.resourceId ?? ''],
    [a.gpuTypeId, b.gpuTypeId],
  ] as const) {
    if (x !== y) return x < y ? -1 : 1
  }
  return 0
}

function subjectValues(s: UsageSubject): unknown[] {
  return [
    s.accountId,
    s.product,
    s.component,
    s.resourceId,
    s.partId,
    s.gpuTypeId,
    s.quantity,
    s.priceMicros,
    s.periodMs,
  ]
}

/** The bucket of a roll-up row (of the grain `size` is made of), in SQL: weeks start on Monday (1970-01-01 was a Thursday). */
const BUCKET: Record<BucketSize, string> = {
  hour: 'bucket',
  day: 'bucket',
  week: 'bucket - ((bucket / 86400000 + 3) % 7) * 86400000',
  month: 'bucket',
  year: `(extract(epoch FROM date_trunc('year', to_timestamp(bucket / 1000) AT TIME ZONE 'UTC')) * 1000)::bigint`,
}

/** SQL conditions for a filter, numbered after `values` (which it extends); products inlined from a closed set. */
function conditions(f: UsageFilter | RollupFilter, values: unknown[]): { where: string; values: unknown[] } {
  const out = [...values]
  let where = ''
  if (f.accountId !== undefined) where += ` AND account_id = $${out.push(f.accountId)}`
  where += ` AND product IN (${f.products.map((p) => `'${p.replace(/[^a-z]/g, '')}'`).join(', ')})`
  if (f.resourceId !== undefined) where += ` AND resource_id = $${out.push(f.resourceId)}`
  if ('partId' in f && f.partId !== undefined) where += ` AND part_id = $${out.push(f.partId)}`
  if (f.gpuTypeId !== undefined) where += ` AND gpu_type_id = $${out.push(f.gpuTypeId)}`
  return { where, values: out }
}
