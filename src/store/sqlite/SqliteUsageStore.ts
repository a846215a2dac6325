import type Database from 'better-sqlite3'
import { bucketEndAtOrAfter, bucketStart, splitSpan } from '../../domain/billing/buckets.js'
import { intervalPieces, USAGE_COMPONENTS, type UsageComponent, type UsageInterval, type UsageSubject } from '../../domain/billing/usage.js'
import type { DailyFilter, DailyGrouping, DailySum, UsageFilter, UsageStore } from '../UsageStore.js'
import { toInterval } from '../rows.js'

const COLUMN: Record<UsageComponent, string> = { gpu: 'gpu', cpu: 'cpu', disk: 'disk', fee: 'fee', standard: 'standard', highPerformance: 'high_performance', networking: 'networking' }

/** The usage ledger in SQLite (migration 050). */
export class SqliteUsageStore implements UsageStore {
  private readonly s
  private readonly addDaily: Record<UsageComponent, Database.Statement>
  private readonly addDailyGpu: Record<UsageComponent, Database.Statement>
  private readonly addMonth: Database.Statement
  private readonly filtered = new Map<string, Database.Statement>()

  constructor(private readonly db: Database.Database) {
    this.s = {
      open: db.prepare(`INSERT INTO usage_intervals (account_id, product, component, resource_id, part_id, gpu_type_id, quantity, price_micros, period_ms, started_at, ended_at)
        VALUES (@accountId, @product, @component, @resourceId, @partId, @gpuTypeId, @quantity, @priceMicros, @periodMs, @startedAt, @endedAt)`),
      get: db.prepare('SELECT * FROM usage_intervals WHERE id = ?'),
      end: db.prepare('UPDATE usage_intervals SET ended_at = max(started_at, ?) WHERE id = ? AND ended_at IS NULL'),
      listOpen: db.prepare('SELECT * FROM usage_intervals WHERE ended_at IS NULL ORDER BY started_at, id'),
      lastAlive: db.prepare(`SELECT at FROM usage_marks WHERE key = 'alive'`),
      noteAlive: db.prepare(`INSERT INTO usage_marks (key, at) VALUES ('alive', ?) ON CONFLICT (key) DO UPDATE SET at = excluded.at`),
    }
    this.addDaily = Object.fromEntries(
      USAGE_COMPONENTS.map((c) => [
        c,
        db.prepare(`INSERT INTO usage_daily (account_id, product, day, resource_id, gpu_type_id, ${COLUMN[c]})
          VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET ${COLUMN[c]} = ${COLUMN[c]} + excluded.${COLUMN[c]}`),
      ]),
    ) as Record<UsageComponent, Database.Statement>
    this.addDailyGpu = Object.fromEntries(
      USAGE_COMPONENTS.map((c) => [
        c,
        db.prepare(`INSERT INTO usage_daily_gpu (account_id, product, day, gpu_type_id, ${COLUMN[c]})
          VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET ${COLUMN[c]} = ${COLUMN[c]} + excluded.${COLUMN[c]}`),
      ]),
    ) as Record<UsageComponent, Database.Statement>
    this.addMonth = db.prepare('INSERT OR IGNORE INTO usage_monthly_resources (account_id, product, month, resource_id) VALUES (?, ?, ?, ?)')
  }

  async open(subject: UsageSubject, at: number): Promise<UsageInterval> {
    const id = Number(this.s.open.run({ ...subject, startedAt: at, endedAt: null }).lastInsertRowid)
    return { ...subject, id, startedAt: at, endedAt: null }
  }

  async close(ids: readonly number[], at: number): Promise<void> {
    this.db.transaction(() => {
      for (const id of ids) {
        if (this.s.end.run(at, id).changes === 0) continue
        this.rollUp(toInterval(this.s.get.get(id)))
      }
    })()
  }

  async insertClosed(intervals: ReadonlyArray<UsageSubject & { startedAt: number; endedAt: number }>): Promise<void> {
    this.db.transaction(() => {
      for (const i of intervals) {
        const id = Number(this.s.open.run(i).lastInsertRowid)
        this.rollUp({ ...i, id })
      }
    })()
  }

  async listOpen(): Promise<UsageInterval[]> {
    return this.s.listOpen.all().map(toInterval)
  }

  async listOverlapping(filter: UsageFilter, from: number, to: number): Promise<UsageInterval[]> {
    const { where, params } = conditions(filter)
    const closed = this.statement(`closed|${where}`, `SELECT * FROM usage_intervals WHERE ended_at IS NOT NULL AND ended_at > @from AND started_at < @to${where} ORDER BY started_at, id`)
    const open = this.statement(`open|${where}`, `SELECT * FROM usage_intervals WHERE ended_at IS NULL AND started_at < @to${where} ORDER BY started_at, id`)
    return [...closed.all({ ...params, from, to }), ...open.all({ ...params, to })].map(toInterval)
  }

  async sumDaily(filter: DailyFilter, from: number, to: number, g: DailyGrouping): Promise<DailySum[]> {
    // Sums not by resource (nor filtered by one) read the smaller per-GPU-type roll-up.
    const table = g.by.includes('resourceId') || filter.resourceId !== undefined ? 'usage_daily' : 'usage_daily_gpu'
    const { where, params } = conditions(filter)
    const cols = g.by.map((c) => GROUP_COLUMN[c])
    const keys = ['product', ...cols].join(', ')
    const sql = `SELECT ${BUCKET[g.size]} AS bucket, ${keys}, ${USAGE_COMPONENTS.map((c) => `sum(${COLUMN[c]}) AS ${COLUMN[c]}`).join(', ')}
      FROM ${table} WHERE day >= @from AND day < @to${where} GROUP BY bucket, ${keys} ORDER BY bucket`
    const rows = this.statement(`sum|${table}|${g.size}|${keys}|${where}`, sql).all({ ...params, from, to }) as Array<Record<string, string | number>>
    return rows.map((r) => ({
      bucket: r.bucket as number,
      product: r.product as DailySum['product'],
      accountId: (r.account_id as string | undefined) ?? null,
      resourceId: (r.resource_id as string | undefined) ?? null,
      gpuTypeId: (r.gpu_type_id as string | undefined) || null,
      amounts: { gpu: r.gpu as number, cpu: r.cpu as number, disk: r.disk as number, fee: r.fee as number, standard: r.standard as number, highPerformance: r.high_performance as number, networking: r.networking as number },
    }))
  }

  async resourcesWithUse(filter: DailyFilter, from: number, to: number): Promise<string[]> {
    const { where, params } = conditions(filter)
    const days = (a: number, b: number) =>
      a < b ? (this.statement(`res|${where}`, `SELECT DISTINCT resource_id FROM usage_daily WHERE day >= @from AND day < @to${where}`).all({ ...params, from: a, to: b }) as Array<{ resource_id: string }>) : []
    // Whole months come from the monthly presence rows (unless filtered by GPU type, which they do not know);
    // the partial months at either end from the daily rows.
    const firstMonth = bucketEndAtOrAfter(from, 'month')
    const lastMonth = bucketStart(to, 'month')
    if (filter.gpuTypeId !== undefined || firstMonth >= lastMonth) return days(from, to).map((r) => r.resource_id)
    const { where: w, params: p } = conditions({ ...filter, gpuTypeId: undefined })
    const months = this.statement(`resm|${w}`, `SELECT DISTINCT resource_id FROM usage_monthly_resources WHERE month >= @from AND month < @to${w}`).all({ ...p, from: firstMonth, to: lastMonth }) as Array<{ resource_id: string }>
    return [...new Set([...months, ...days(from, firstMonth), ...days(lastMonth, to)].map((r) => r.resource_id))]
  }

  async lastAlive(): Promise<number | null> {
    return (this.s.lastAlive.get() as { at: number } | undefined)?.at ?? null
  }

  async noteAlive(at: number): Promise<void> {
    this.s.noteAlive.run(at)
  }

  /** Adds a closed interval's cost, split at UTC midnights, to the daily roll-up. */
  private rollUp(i: UsageInterval): void {
    const daily = this.addDaily[i.component]
    const gpu = this.addDailyGpu[i.component]
    for (const p of intervalPieces(i, i.startedAt, i.endedAt!, 'day', i.endedAt!)) {
      daily.run(i.accountId, i.product, p.bucket, i.resourceId, i.gpuTypeId ?? '', p.amount)
      gpu.run(i.accountId, i.product, p.bucket, i.gpuTypeId ?? '', p.amount)
    }
    for (const m of splitSpan(i.startedAt, i.endedAt!, 'month')) this.addMonth.run(i.accountId, i.product, m.bucket, i.resourceId)
  }

  private statement(key: string, sql: string): Database.Statement {
    let s = this.filtered.get(key)
    if (!s) this.filtered.set(key, (s = this.db.prepare(sql)))
    return s
  }
}

const GROUP_COLUMN = { accountId: 'account_id', resourceId: 'resource_id', gpuTypeId: 'gpu_type_id' } as const

/** The bucket of a roll-up day, in SQL: weeks start on Monday (1970-01-01 was a Thursday). */
const BUCKET: Record<DailyGrouping['size'], string> = {
  day: 'day',
  week: 'day - ((day / 86400000 + 3) % 7) * 86400000',
  month: "CAST(strftime('%s', day / 1000, 'unixepoch', 'start of month') AS INTEGER) * 1000",
  year: "CAST(strftime('%s', day / 1000, 'unixepoch', 'start of year') AS INTEGER) * 1000",
}

/** SQL conditions for a filter; products are inlined from a closed set, the rest are bound. */
function conditions(f: UsageFilter | DailyFilter): { where: string; params: Record<string, string> } {
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

