import type { QuotaLimits } from '../domain/quotas/quotas.js'

/** What happens to an account's running work once it reaches a spend limit (new starts stop either way). */
export type AtSpendLimit = 'FINISH' | 'STOP'

/**
 * An account's quotas, set by the admin. A null limit is no limit. Spend limits are micro-dollars (see
 * domain/billing/money.ts) over the current UTC hour and the current UTC calendar month of the billing ledger.
 */
export interface AccountQuotaRecord extends QuotaLimits {
  accountId: string
  /** At a spend limit: running work finishes (and nothing new starts) or is stopped. */
  atSpendLimit: AtSpendLimit
  /**
   * Fair share: GPUs the account is guaranteed when capacity is short; what it holds beyond them is borrowed,
   * and given back first when an account below its guarantee needs a GPU. Null: nothing guaranteed.
   */
  guaranteedGpus: number | null
  /** Fair share: orders who gets scarce GPUs (the lowest GPUs-held / weight first). At least 1. */
  weight: number
  /** ISO 8601. */
  updatedAt: string
}

/** Quotas of accounts, one record per account; an account without one has no limits and weight 1. */
export interface QuotaStore {
  get(accountId: string): Promise<AccountQuotaRecord | undefined>
  /** Creates or replaces the account's record. */
  put(quota: AccountQuotaRecord): Promise<void>
  /** False when the account had none. */
  delete(accountId: string): Promise<boolean>
  /** Every record, by account id. */
  list(): Promise<AccountQuotaRecord[]>
}
