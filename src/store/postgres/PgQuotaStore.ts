import type { AccountQuotaRecord, QuotaStore } from '../QuotaStore.js'
import { quotaFromRow } from '../quotaRow.js'
import type { PgQueryable } from './PgQueryable.js'

/** Account quotas in PostgreSQL (table account_quotas). */
export class PgQuotaStore implements QuotaStore {
  constructor(private readonly q: PgQueryable) {}
  async get(accountId: string): Promise<AccountQuotaRecord | undefined> {
    const row = (await this.q.query('SELECT * FROM account_quotas WHERE account_id = $1', [accountId])).rows[0]
    return row ? quotaFromRow(row) : undefined
  }
  async put(x: AccountQuotaRecord): Promise<void> {
    await this.q.query(
      `INSERT INTO account_quotas (account_id, gpus, workers, pods, network_volume_gb, spend_per_hour_micros,
         spend_per_month_micros, at_spend_limit, guaranteed_gpus, weight, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (account_id) DO UPDATE SET gpus = excluded.gpus, workers = excluded.workers, pods = excluded.pods,
         network_volume_gb = excluded.network_volume_gb, spend_per_hour_micros = excluded.spend_per_hour_micros,
         spend_per_month_micros = excluded.spend_per_month_micros, at_spend_limit = excluded.at_spend_limit,
         guaranteed_gpus = excluded.guaranteed_gpus, weight = excluded.weight, updated_at = excluded.updated_at`,
      [
        x.accountId,
        x.gpus,
        x.workers,
        x.pods,
        x.networkVolumeGb,
        x.spendPerHourMicros,
        x.spendPerMonthMicros,
        x.atSpendLimit,
        x.guaranteedGpus,
        x.weight,
        x.updatedAt,
      ],
    )
  }
  async delete(accountId: string): Promise<boolean> {
    return ((await this.q.query('DELETE FROM account_quotas WHERE account_id = $1', [accountId])).rowCount ?? 0) > 0
  }
  async list(): Promise<AccountQuotaRecord[]> {
    return (await this.q.query('SELECT * FROM account_quotas ORDER BY account_id')).rows.map((r) => quotaFromRow(r))
  }
}
