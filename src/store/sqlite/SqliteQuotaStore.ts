import type Database from 'better-sqlite3'
import type { AccountQuotaRecord, QuotaStore } from '../QuotaStore.js'
import { quotaFromRow } from '../quotaRow.js'

/** Account quotas in SQLite (table account_quotas). */
export class SqliteQuotaStore implements QuotaStore {
  private readonly stmts
  constructor(db: Database.Database) {
    this.stmts = {
      get: db.prepare('SELECT * FROM account_quotas WHERE account_id = ?'),
      all: db.prepare('SELECT * FROM account_quotas ORDER BY account_id'),
      del: db.prepare('DELETE FROM account_quotas WHERE account_id = ?'),
      put: db.prepare(
        `INSERT INTO account_quotas (account_id, gpus, workers, pods, network_volume_gb, spend_per_hour_micros,
           spend_per_month_micros, at_spend_limit, guaranteed_gpus, weight, updated_at)
         VALUES (@accountId, @gpus, @workers, @pods, @networkVolumeGb, @spendPerHourMicros, @spendPerMonthMicros,
           @atSpendLimit, @guaranteedGpus, @weight, @updatedAt)
         ON CONFLICT (account_id) DO UPDATE SET gpus = excluded.gpus, workers = excluded.workers, pods = excluded.pods,
           network_volume_gb = excluded.network_volume_gb, spend_per_hour_micros = excluded.spend_per_hour_micros,
           spend_per_month_micros = excluded.spend_per_month_micros, at_spend_limit = excluded.at_spend_limit,
           guaranteed_gpus = excluded.guaranteed_gpus, weight = excluded.weight, updated_at = excluded.updated_at`,
      ),
    }
  }
  async get(accountId: string) {
    const row = this.stmts.get.get(accountId)
    return row ? quotaFromRow(row as Record<string, unknown>) : undefined
  }
  async put(q: AccountQuotaRecord) {
    this.stmts.put.run(q)
  }
  async delete(accountId: string) {
    return this.stmts.del.run(accountId).changes > 0
  }
  async list() {
    return this.stmts.all.all().map((r) => quotaFromRow(r as Record<string, unknown>))
  }
}
