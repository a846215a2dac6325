import type Database from 'better-sqlite3'
import type { BucketSize } from '../../domain/billing/buckets.js'
import { grainOf, grainSpans, rollupRows } from '../../domain/billing/rollup.js'
import { USAGE_COMPONENTS, type UsageInterval, type UsageSubject } from '../../domain/billing/usage.js'
import type { RollupFilter, RollupGrouping, RollupSum, UsageFilter, UsageStore } from '../UsageStore.js'
import { AMOUNT_COLUMNS as AMOUNTS, rollupRead } from '../rollupRead.js'
import { toInterval } from '../rows.js'

const ADD = AMOUNTS.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')

/** The usage ledger in SQLite (migrations 050 and 150). */
export class SqliteUsageStore implements UsageStore {
  private readonly s
  private readonly filtered = new Map<string, Database.Statement>()

  constructor(private readonly db: Database.Database) {
    this.s = {
      open: db.prepare(`INSERT INTO usage_intervals (account_id, product, component, resource_id, part_id, gpu_type_id, quantity, price_micros, period_ms, started_at, ended_at)
        VALUES (@accountId, @product, @component, @resourceId, @partId, @gpuTypeId, @quantity, @priceMicros, @periodMs, @startedAt, @endedAt)`),
      get: db.prepare('SELECT * FROM usage_intervals WHERE id = ?'),
      end: db.prepare('UPDATE usage_intervals SET ended_at = max(started_at, ?) WHERE id = ? AND ended_at IS NULL'),
      listOpen: db.prepare('SELECT * FROM usage_intervals WHERE ended_at IS NULL ORDER BY started_at, id'),
      lastAlive: db.prepare(`SELECT at FROM usage_marks WHERE key = 'alive'`),
      noteAlive: db.prepare(
        `INSERT INTO usage_marks (key, at) VALUES ('alive', ?) ON CONFLICT (key) DO UPDATE SET at = excluded.at`,
      ),
      addRollup:
        db.prepare(`INSERT INTO usage_rollup (account_id, product, grain, bucket, resource_id, gpu_type_id, ${AMOUNTS.join(', ')})
        VALUES (?, ?, ?, ?, ?, ?, ${AMOUNTS.map(() => '?').join(', ')}) ON CONFLICT DO UPDATE SET ${ADD}`),
      addRollupGpu:
        db.prepare(`INSERT INTO usage_rollup_gpu (account_id, product, grain, bucket, gpu_type_id, ${AMOUNTS.join(', ')})
        VALUES (?, ?, ?, ?, ?, ${AMOUNTS.map(() => '?').join(', ')}) ON CONFLICT DO UPDATE SET ${ADD}`),
    }
  }

  async open(subject: UsageSubject, at: number): Promise<UsageInterval> {
    const id = Number(this.s.open.run({ ...subject, startedAt: at, endedAt: null }).lastInsertRowid)
    return { ...subject, id, startedAt: at, endedAt: null }
  }

  async close(ids: readonly number[], at: number): Promise<void> {
    this.db.transaction(() => {
      const closed: Array<UsageInterval & { endedAt: number }> = []
      for (const id of ids) {
        if (this.s.end.run(at, id).changes === 0) continue
        closed.push(toInterval(this.s.get.get(id)) as UsageInterval & { endedAt: number })
      }
      this.rollUp(closed)
    })()
  }

  async insertClosed(intervals: ReadonlyArray<UsageSubject & { startedAt: number; endedAt: number }>): Promise<void> {
    this.db.transaction(() => {
      this.rollUp(intervals.map((i) => ({ ...i, id: Number(this.s.open.run(i).lastInsertRowid) })))
    })()
  }

  async listOpen(): Promise<UsageInterval[]> {
    return this.s.listOpen.all().map(toInterval)
  }

  async listOverlapping(filter: UsageFilter, from: number, to: number): Promise<UsageInterval[]> {
    const { where, params } = conditions(filter)
    const closed = this.statement(
      `closed|${where}`,
      `SELECT * FROM usage_intervals WHERE ended_at IS NOT NULL AND ended_at > @from AND started_at < @to${where} ORDER BY started_at, id`,
    )
    const open = this.statement(
      `open|${where}`,
      `SELECT * FROM usage_intervals WHERE ended_at IS NULL AND started_at < @to${where} ORDER BY started_at, id`,
    )
    return [...closed.all({ ...params, from, to }), ...open.all({ ...params, to })].map(toInterval)
  }

  async sumRollup(filter: RollupFilter, from: number, to: number, g: RollupGrouping): Promise<RollupSum[]> {
    const { table, keys, distinct } = rollupRead(filter, g)
    const { where, params } = conditions(filter)
    const sql = distinct
      ? `SELECT bucket, ${keys}, ${AMOUNTS.join(', ')} FROM ${table} WHERE grain = @grain AND bucket >= @from AND bucket < @to${where}`
      : `SELECT ${BUCKET[g.size]} AS bucket, ${keys}, ${AMOUNTS.map((c) => `sum(${c})`).join(', ')}
         FROM ${table} WHERE grain = @grain AND bucket >= @from AND bucket < @to${where} GROUP BY 1, ${keys}`
    // Rows as arrays: a year of 100 pods by day is 36,600 of them, and naming each column of each costs.
    const rows = this.statement(`sum|${sql}`, sql)
      .raw(true)
      .all({ ...params, grain: grainOf(g.size), from, to }) as Array<Array<string | number>>
    const n = 2 + g.by.length
    return rows.map((r) => {
      const sum: RollupSum = {
        bucket: r[0] as number,
        product: r[1] as RollupSum['product'],
        accountId: null,
        resourceId: null,
        gpuTypeId: null,
        amounts: {
          gpu: r[n] as number,
          cpu: r[n + 1] as number,
          disk: r[n + 2] as number,
          fee: r[n + 3] as number,
          standard: r[n + 4] as number,
          highPerformance: r[n + 5] as number,
          networking: r[n + 6] as number,
        },
      }
      // gpu_type_id '' is no GPU type.
      g.by.forEach((c, k) => (sum[c] = (r[2 + k] as string) || null))
      return sum
    })
  }

  async resourcesWithUse(
    filter: RollupFilter,
    from: number,
    to: number,
    opts: { costly?: boolean } = {},
  ): Promise<string[]> {
    const { where, params } = conditions(filter)
    const cost = opts.costly ? ` AND ${AMOUNTS.join(' + ')} > 0` : ''
    const names = this.statement(
      `res|${where}${cost}`,
      `SELECT DISTINCT resource_id FROM usage_rollup WHERE grain = @grain AND bucket >= @from AND bucket < @to${where}${cost}`,
    )
    const found = new Set<string>()
    for (const span of grainSpans(from, to))
      for (const r of names.all({ ...params, ...span }) as Array<{ resource_id: string }>) found.add(r.resource_id)
    return [...found]
  }

  async lastAlive(): Promise<number | null> {
    return (this.s.lastAlive.get() as { at: number } | undefined)?.at ?? null
  }

  async noteAlive(at: number): Promise<void> {
    this.s.noteAlive.run(at)
  }

  /** Adds closed intervals' cost to the roll-ups (see rollupRows). */
  private rollUp(intervals: ReadonlyArray<UsageInterval & { endedAt: number }>): void {
    for (const r of rollupRows(intervals)) {
      const amounts = USAGE_COMPONENTS.map((c) => r.amounts[c])
      if (r.resourceId === null)
        this.s.addRollupGpu.run(r.accountId, r.product, r.grain, r.bucket, r.gpuTypeId, ...amounts)
      else this.s.addRollup.run(r.accountId, r.product, r.grain, r.bucket, r.resourceId, r.gpuTypeId, ...amounts)
    }
  }

  private statement(key: string, sql: string): Database.Statement {
    let s = this.filtered.get(key)
    if (!s) this.filtered.set(key, (s = this.db.prepare(sql)))
    return s
  }
}

/** The bucket of a roll-up row (of the grain `size` is made of), in SQL: weeks start on Monday (1970-01-01 was a Thursday). */
const BUCKET: Record<BucketSize, string> = {
  hour: 'bucket',
  day: 'bucket',
  week: 'bucket - ((bucket / 86400000 + 3) % 7) * 86400000',
  month: 'bucket',
  year: "CAST(strftime('%s', bucket / 1000, 'unixepoch', 'start of year') AS INTEGER) * 1000",
}

/** SQL conditions for a filter; products are inlined from a closed set, the rest are bound. */
function conditions(f: UsageFilter | RollupFilter): { where: string; params: Record<string, string> } {
  const params: Record<string, string> = {}
  let where = ''
  if (f.accountId !== undefined) {
    where += ' AND account_id = @accountId'
    params.accountId = f.accountId
  }
  where += ` AND product IN (${f.products.map((p) => `'${p.replace(/[^a-z]/g, '')}'`).join(', ')})`
  if (f.resourceId !== undefined) {
    where += ' AND resource_id = @resourceId'
    params.resourceId = f.resourceId
  }
  if ('partId' in f && f.partId !== undefined) {
    where += ' AND part_id = @partId'
    params.partId = f.partId
  }
  if (f.gpuTypeId !== undefined) {
    where += ' AND gpu_type_id = @gpuTypeId'
    params.gpuTypeId = f.gpuTypeId
  }
  return { where, params }
}
