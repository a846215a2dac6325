import type { AccountBillingSummary, AnyBillingQuery, BillingHistory } from '../../contract/billing.js'
import { microsToUsd, type Micros } from '../../domain/billing/money.js'
import { resolveQuery, type ResolvedQuery } from '../../domain/billing/query.js'
import { buildRecords, type Contribution } from '../../domain/billing/records.js'
import { amountFields, ROUTES, type BillingRoute } from '../../domain/billing/routes.js'
import { intervalPieces, USAGE_COMPONENTS, type UsageInterval } from '../../domain/billing/usage.js'
import type { Clock } from '../../domain/clock.js'
import { DomainError, notFound } from '../../domain/errors.js'
import type { Store } from '../../store/Store.js'
import type { RollupGrouping, UsageFilter } from '../../store/UsageStore.js'
import type { Principal } from '../accounts/AccountService.js'

/**
 * The `/v2/billing` histories, read from the usage ledger: the roll-ups of closed intervals (per hour, day or
 * month, see domain/billing/rollup.ts) plus the running intervals up to now; histories by worker are cut from
 * the intervals themselves. Both follow the same rounding rule (see domain/billing/money.ts), so they agree
 * to the micro-dollar.
 */
export class BillingService {
  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  /** One billing route for the caller's account, or with `account` (admin keys only) for that one. */
  async history(principal: Principal, route: BillingRoute, q: AnyBillingQuery): Promise<BillingHistory> {
    const accountId = await this.accountOf(principal, q.account)
    const now = this.deps.clock.now()
    const rq = resolveQuery(route, q, now)
    const { contributions, resources } = await this.contributions(
      { accountId, products: ROUTES[route].products, ...rq.filters },
      rq,
      now,
    )
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
    for (const row of await this.deps.store.usage.sumRollup(filter, rq.start, rq.end, {
      size: 'day',
      by: ['accountId'],
    })) {
      for (const c of USAGE_COMPONENTS)
        add(row.accountId!, ROUTES.aggregate.fields[`${row.product}.${c}`], row.amounts[c])
    }
    for (const i of await this.openIntervals(filter)) {
      for (const p of intervalPieces(i, rq.start, rq.end, 'day', now))
        add(i.accountId, ROUTES.aggregate.fields[`${i.product}.${i.component}`], p.amount)
    }
    const accounts = (await this.deps.store.accounts.list()).map((a) => ({
      accountId: a.id,
      accountName: a.name,
      ...usd(byAccount.get(a.id) ?? Object.fromEntries(fields.map((f) => [f, 0]))),
    }))
    return {
      accounts: accounts as AccountBillingSummary['accounts'],
      metadata: {
        query: { startTime: rq.echo.startTime!, endTime: rq.echo.endTime!, bucketSize: 'day' },
        accountCount: accounts.length,
        totals: usd(totals) as AccountBillingSummary['metadata']['totals'],
      },
    }
  }

  /**
   * Each bucket's share of the usage matching `filter`, skipping shares that cost nothing, and (from the
   * roll-ups) how many resources had use. Histories by worker are cut from the intervals; the rest sums the
   * roll-ups in the store, grouped as the records will be, plus what runs now.
   */
  private async contributions(
    filter: UsageFilter,
    rq: ResolvedQuery,
    now: number,
  ): Promise<{ contributions: Contribution[]; resources: number | null }> {
    const { store } = this.deps
    const size = rq.bucketSize
    const cut = (intervals: UsageInterval[], out: Contribution[]) => {
      for (const i of intervals) {
        for (const p of intervalPieces(i, rq.start, rq.end, size, now))
          if (p.amount !== 0) out.push({ ...i, bucket: p.bucket, amounts: { [i.component]: p.amount } })
      }
    }
    if (filter.partId !== undefined || (rq.route === 'serverless' && rq.grouping === 'podId')) {
      const contributions: Contribution[] = []
      cut(await store.usage.listOverlapping(filter, rq.start, rq.end), contributions)
      return { contributions, resources: null }
    }
    const { partId: _, ...rollup } = filter
    // Roll-up sums are contributions as they are (a year of 100 pods by day is 36,600 of them).
    const contributions: Contribution[] = await store.usage.sumRollup(rollup, rq.start, rq.end, {
      size,
      by: rollupGrouping(rq),
    })
    const open = await this.openIntervals(filter)
    cut(open, contributions)
    if (ROUTES[rq.route].uniqueCount === null) return { contributions, resources: null }
    // Hour histories have always counted only resources whose use in the range cost something (they were cut
    // from the intervals, and a piece that costs nothing is no contribution); longer ones every resource with use.
    const resources = new Set(await store.usage.resourcesWithUse(rollup, rq.start, rq.end, { costly: size === 'hour' }))
    for (const i of open)
      if (intervalPieces(i, rq.start, rq.end, size, now).some((p) => p.amount !== 0)) resources.add(i.resourceId)
    return { contributions, resources: resources.size }
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
    if (!principal.admin)
      throw new DomainError(
        'forbidden',
        'account: only admin keys may read the billing of an account by name; leave it out to read your own',
      )
    const { accounts } = this.deps.store
    const found = (await accounts.get(account)) ?? (await accounts.getByName(account))
    if (!found) throw notFound('account', account)
    return found.id
  }
}

/** The columns the roll-ups are summed by for a history's records (see records.ts grouper). */
function rollupGrouping(rq: ResolvedQuery): RollupGrouping['by'] {
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
