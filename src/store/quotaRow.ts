import type { AccountQuotaRecord } from './QuotaStore.js'

/** A row of account_quotas as a record; both adapters (BIGINT columns may come back as strings from pg). */
export function quotaFromRow(r: Record<string, unknown>): AccountQuotaRecord {
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v))
  return {
    accountId: r.account_id as string,
    gpus: n(r.gpus),
    workers: n(r.workers),
    pods: n(r.pods),
    networkVolumeGb: n(r.network_volume_gb),
    spendPerHourMicros: n(r.spend_per_hour_micros),
    spendPerMonthMicros: n(r.spend_per_month_micros),
    atSpendLimit: r.at_spend_limit as AccountQuotaRecord['atSpendLimit'],
    guaranteedGpus: n(r.guaranteed_gpus),
    weight: Number(r.weight),
    updatedAt: r.updated_at as string,
  }
}
