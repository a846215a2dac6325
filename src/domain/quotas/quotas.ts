import { microsToUsd } from '../billing/money.js'
import { DomainError } from '../errors.js'

/** The quotas an admin may set on an account. */
export type QuotaName = 'gpus' | 'workers' | 'pods' | 'networkVolumeGb' | 'spendPerHour' | 'spendPerMonth'

/** An account's limits (null: none); spend in micro-dollars. The store's AccountQuotaRecord extends them. */
export interface QuotaLimits {
  /** GPUs held at once by the account's workers and pods. */
  gpus: number | null
  /** The sum of `workers.max` over the account's endpoints (the hosted platform's worker quota). */
  workers: number | null
  /** Pods that are not terminated. */
  pods: number | null
  /** The sum of the sizes of the account's network volumes, GB. */
  networkVolumeGb: number | null
  spendPerHourMicros: number | null
  spendPerMonthMicros: number | null
}

/** What an account uses now, against each quota; spend in micro-dollars. */
export interface QuotaUse {
  gpus: number
  workers: number
  pods: number
  networkVolumeGb: number
  spendPerHour: number
  spendPerMonth: number
}

/** A quota a request would pass (or has reached, for spend): the numbers a refusal and why-waiting show. */
export interface QuotaBreach {
  quota: QuotaName
  /** In use now (USD for spend). */
  use: number
  /** What the request adds (0 for a spend limit, which stops any new start). */
  requested: number
  /** The limit (USD for spend). */
  limit: number
}

/** The limit of one quota, in the units QuotaUse counts (micro-dollars for spend), or null. */
export function limitOf(q: QuotaLimits | undefined, name: QuotaName): number | null {
  if (!q) return null
  if (name === 'spendPerHour') return q.spendPerHourMicros
  if (name === 'spendPerMonth') return q.spendPerMonthMicros
  return q[name]
}

/**
 * The first quota that `add` would pass: `use + add > limit`. A request adding nothing to a quota never
 * breaks it (lowering a limit below the use refuses growth, not what exists).
 */
export function wouldPass(
  q: QuotaLimits | undefined,
  use: Partial<QuotaUse>,
  add: Partial<Record<'gpus' | 'workers' | 'pods' | 'networkVolumeGb', number>>,
): QuotaBreach | null {
  for (const name of ['gpus', 'workers', 'pods', 'networkVolumeGb'] as const) {
    const more = add[name] ?? 0
    const limit = limitOf(q, name)
    if (more <= 0 || limit === null) continue
    const now = use[name] ?? 0
    if (now + more > limit) return { quota: name, use: now, requested: more, limit }
  }
  return null
}

/** The spend limit reached (spend >= limit), the hourly one first; numbers in USD. */
export function spendReached(q: QuotaLimits | undefined, use: Pick<QuotaUse, 'spendPerHour' | 'spendPerMonth'>) {
  for (const name of ['spendPerHour', 'spendPerMonth'] as const) {
    const limit = limitOf(q, name)
    if (limit !== null && use[name] >= limit)
      return { quota: name, use: microsToUsd(use[name]), requested: 0, limit: microsToUsd(limit) } as QuotaBreach
  }
  return null
}

const UNITS: Record<QuotaName, (n: number) => string> = {
  gpus: (n) => `${n} GPU${n === 1 ? '' : 's'}`,
  workers: (n) => `${n} worker${n === 1 ? '' : 's'}`,
  pods: (n) => `${n} pod${n === 1 ? '' : 's'}`,
  networkVolumeGb: (n) => `${n} GB`,
  spendPerHour: (n) => `$${n}`,
  spendPerMonth: (n) => `$${n}`,
}

const WHAT: Record<QuotaName, string> = {
  gpus: 'GPUs held by its workers and pods',
  workers: 'workers.max summed over its endpoints',
  pods: 'pods that are not terminated',
  networkVolumeGb: 'network volume storage',
  spendPerHour: 'spend this UTC hour',
  spendPerMonth: 'spend this UTC month',
}

/** One line naming the quota, its use and its limit: `quota gpus (GPUs held ...): 2 GPUs in use + 1 requested would pass the limit of 2 GPUs`. */
export function describeBreach(b: QuotaBreach): string {
  const u = UNITS[b.quota]
  if (b.quota === 'spendPerHour' || b.quota === 'spendPerMonth')
    return `quota ${b.quota} (${WHAT[b.quota]}): ${u(b.use)} spent has reached the limit of ${u(b.limit)}; nothing new starts until the ${b.quota === 'spendPerHour' ? 'hour' : 'month'} ends or the limit is raised`
  return `quota ${b.quota} (${WHAT[b.quota]}): ${u(b.use)} in use + ${b.requested} requested would pass the limit of ${u(b.limit)}`
}

/** The refusal of a request that would pass a quota: 403 (as Kubernetes refuses past a ResourceQuota), with the numbers in `quota`. */
export class QuotaExceeded extends DomainError {
  constructor(
    readonly breach: QuotaBreach,
    /** What was refused, e.g. `pod create`. */
    what: string,
  ) {
    super('forbidden', `${what} refused: ${describeBreach(breach)}`, undefined, undefined)
    this.name = 'QuotaExceeded'
  }
  /** Extension members of the problem (RFC 9457 §3.2). */
  override get extensions(): Record<string, unknown> {
    return {
      quota: {
        name: this.breach.quota,
        use: this.breach.use,
        requested: this.breach.requested,
        limit: this.breach.limit,
      },
    }
  }
}

/** The marker that starts a placement failure caused by a quota, so why-waiting says QUOTA, not NO_CAPACITY. */
export const QUOTA_PREFIX = 'QUOTA: '
