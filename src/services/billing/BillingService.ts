import type { AccountBillingSummary, AnyBillingQuery, BillingHistory } from '../../contract/billing.js'
import { microsToUsd, type Micros } from '../../domain/billing/money.js'
import { resolveQuery, type ResolvedQuery } from '../../domain/billing/query.js'
import { buildRecords, type Contribution } from '../../domain/billing/records.js'
import { amountFields, ROUTES, type BillingRoute } from '../../domain/billing/routes.js'
import { intervalPieces, USAGE_COMPONENTS, type UsageInterval } from '../../domain/billing/usage.js'
import type { Clock } from '../../domain/clock.js'
import { DomainError, notFound } from '../../domain/errors.js'
import type { Store } from '../../store/Store.js'
import type { DailyGrouping, UsageFilter } from '../../store/UsageStore.js'
import type { Principal } from '../accounts/AccountService.js'

/**
 * The `/v2/billing` histories, read from the usage ledger. Hour buckets are cut from the intervals
 * themselves; larger buckets add up the daily roll-up of closed intervals plus the running ones up to now.
 * Both follow the same rounding rule (see domain/billing/money.ts), so they agree to the micro-dollar.
 */
export class BillingService {
  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  /** One billing route for the caller's account, or with `account` (admin keys only) for that one. */
  async history(principal: Principal, route: BillingRoute, q: AnyBillingQuery): Promise<BillingHistory> {
    const accountId = await this.accountOf(principal, q.account)
    const now = this.deps.clock.now()
    const rq = resolveQuery(route, q, now)
    const { contributions, resources } = await this.contributions({ accountId, products: ROUTES[route].products, ...rq.filters }, rq, now)
    const built = buildRecords(route, rq.grouping, rq.bucketSize, rq.start, rq.end, contributions)
    const unique = ROUTES[route].uniqueCount
    return {
      records: built.records,
      metadata: {
        query: q.account !== undefined ? { ...rq.echo, account: accountId } : rq.echo,
        recordCount: built.records.length,
        totals: usd(built.totals),
        ...(unique ? { [unique]: resources ?? built.uniqueResources } : {}),
      },
    }
  }

  /** Admin: every account's amounts over a range of whole UTC days (the range rules of the histories). */
  async accountSummary(q: AnyBillingQuery): Promise<AccountBillingSummary> {
    const now = this.deps.clock.now()
    const rq = resolveQuery('aggregate', { ...q, bucketSize: 'day' }, now)
    const fields = amountFields('aggregate')
    const byAccount = new Map<string, Record<string, Micros>>()
    const totals: Record<string, Micros> = Object.fromEntries(fields.map((f) => [f, 0]))
    const add = (accountId: string, field: string | undefined, amount: Micros) => {
      if (!field || amount === 0) return
      let m = byAccount.get(accountId)
      if (!m) byAccount.set(accountId, (m = Object.fromEntries(fields.map((f) => [f, 0]))))
      m[field] += amount
      m.totalAmount += amount
      totals[field] += amount
      totals.totalAmount += amount
    }
    const filter: UsageFilter = { products: ROUTES.aggregate.products }
    for (const row of await this.deps.store.usage.sumDaily(filter, rq.start, rq.end, { size: 'day', by: ['accountId'] })) {
      for (const c of USAGE_COMPONENTS) add(row.accountId!, ROUTES.aggregate.fields[`${row.product}.${c}`], row.amounts[c])
    }
    for (const i of await this.openIntervals(filter)) {
      for (const p of intervalPieces(i, rq.start, rq.end, 'day', now)) add(i.accountId, ROUTES.aggregate.fields[`${i.product}.${i.component}`], p.amount)
    }
    const accounts = (await this.deps.store.accounts.list()).map((a) => ({ accountId: a.id, accountName: a.name, ...usd(byAccount.get(a.id) ?? Object.fromEntries(fields.map((f) => [f, 0]))) }))
    return {
      accounts: accounts as AccountBillingSummary['accounts'],
      metadata: { query: { startTime: rq.echo.startTime!, endTime: rq.echo.endTime!, bucketSize: 'day' }, accountCount: accounts.length, totals: usd(totals) as AccountBillingSummary['metadata']['totals'] },
    }
  }

  /**
   * Each bucket's share of the usage matching `filter`, skipping shares that cost nothing, and (from the
   * roll-up) how many resources had use. Hour buckets, and histories by worker, are cut from the intervals;
   * the rest sums the daily roll-up in the store, grouped as the records will be, plus what runs now.
   */
  private async contributions(filter: UsageFilter, rq: ResolvedQuery, now: number): Promise<{ contributions: Contribution[]; resources: number | null }> {
    const out: Contribution[] = []
    const { store } = this.deps
    const cut = (intervals: UsageInterval[]) => {
      for (const i of intervals) {
        for (const p of intervalPieces(i, rq.start, rq.end, rq.bucketSize, now)) if (p.amount !== 0) out.push({ bucket: p.bucket, subject: i, amount: p.amount })
      }
    }
    const size = rq.bucketSize
    if (size === 'hour' || filter.partId !== undefined || (rq.route === 'serverless' && rq.grouping === 'podId')) {
      cut(await store.usage.listOverlapping(filter, rq.start, rq.end))
      return { contributions: out, resources: null }
    }
    const { partId: _, ...daily } = filter
    for (const row of await store.usage.sumDaily(daily, rq.start, rq.end, { size, by: dailyGrouping(rq) })) {
      for (const c of USAGE_COMPONENTS) {
        const amount = row.amounts[c]
        if (amount !== 0) out.push({ bucket: row.bucket, subject: { product: row.product, component: c, resourceId: row.resourceId, partId: null, gpuTypeId: row.gpuTypeId }, amount })
      }
    }
    const open = await this.openIntervals(filter)
    cut(open)
    const resources = new Set(await store.usage.resourcesWithUse(daily, rq.start, rq.end))
    for (const i of open) if (intervalPieces(i, rq.start, rq.end, size, now).some((p) => p.amount !== 0)) resources.add(i.resourceId)
    return { contributions: out, resources: resources.size }
  }

  private async openIntervals(f: UsageFilter): Promise<UsageInterval[]> {
    return (await this.deps.store.usage.listOpen()).filter(
      (i) =>
        (f.accountId === undefined || i.accountId === f.accountId) &&
        f.products.includes(i.product) &&
        (f.resourceId === undefined || i.resourceId === f.resourceId) &&
        (f.partId === undefined || i.partId === f.partId) &&
        (f.gpuTypeId === undefined || i.gpuTypeId === f.gpuTypeId),
    )
  }

  private async accountOf(principal: Principal, account: string | undefined): Promise<string> {
    if (account === undefined) return principal.accountId
    if (!principal.admin) throw new DomainError('forbidden', 'account: only admin keys may read the billing of an account by name; leave it out to read your own')
    const { accounts } = this.deps.store
    const found = (await accounts.get(account)) ?? (await accounts.getByName(account))
    if (!found) throw notFound('account', account)
    return found.id
  }
}

/** The columns the roll-up is summed by for a history's records (see records.ts groupOf). */
function dailyGrouping(rq: ResolvedQuery): DailyGrouping['by'] {
  switch (rq.route) {
    case 'pods':
      return rq.grouping === 'podId' ? ['resourceId', 'gpuTypeId'] : ['gpuTypeId']
    case 'serverless':
      return rq.grouping === 'gpuId' ? ['gpuTypeId'] : ['resourceId']
    case 'networkVolumes':
    case 'clusters':
      return ['resourceId']
    default:
      return []
  }
}

function usd(micros: Record<string, Micros>): Record<string, number> {
  return Object.fromEntries(Object.entries(micros).map(([k, v]) => [k, microsToUsd(v)]))
}
