import type { AllocationOwner, Fleet } from '../../catalog/Fleet.js'
import type { AccountQuotas, SetQuotas } from '../../contract/quota.js'
import { bucketStart, nextBucket } from '../../domain/billing/buckets.js'
import { microsToUsd, usdToMicros, type Micros } from '../../domain/billing/money.js'
import { intervalPieces, type UsageProduct } from '../../domain/billing/usage.js'
import type { Clock } from '../../domain/clock.js'
import { iso } from '../../domain/clock.js'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import { notFound } from '../../domain/errors.js'
import { borrowedGpus, shareOrder, type ShareStanding } from '../../domain/quotas/fairShare.js'
import {
  describeBreach,
  QUOTA_PREFIX,
  QuotaExceeded,
  spendReached,
  wouldPass,
  type QuotaBreach,
} from '../../domain/quotas/quotas.js'
import type { AccountQuotaRecord, AtSpendLimit } from '../../store/QuotaStore.js'
import type { Collections, Store } from '../../store/Store.js'
import type { Log } from '../log.js'

const PRODUCTS: readonly UsageProduct[] = ['pod', 'serverless', 'volume', 'cluster', 'endpoint']

/** What the leader does to an account's running work when it reaches a spend limit. */
export interface SpendEnforcer {
  /** FINISH: workers finish their jobs and stop (pods keep running); STOP: workers and pods are stopped. */
  atSpendLimit(accountId: string, mode: AtSpendLimit, why: string): Promise<void>
}

export interface QuotaServiceOptions {
  store: Store
  clock: Clock
  /** The capacity ledger: what each account holds, and the admission every reservation passes. */
  fleet: Pick<Fleet, 'heldBy' | 'setAdmission'>
  log: Log
  /** How often the leader re-reads quotas set on other replicas and sums spend from the ledger. */
  checkIntervalMs: number
}

/**
 * Quotas and spend limits per account (issue 36, see docs/quotas.md). Requests that would pass a quota are
 * refused where they are made (pod and endpoint create, PATCH of workers.max, network volumes) with the
 * numbers; the fleet asks `admission` before it places anything, so the autoscaler and pod starts never pass
 * the GPU or worker quota, nor start anything at a spend limit. Only the leader places, so its counts are the
 * fleet's: quotas hold across replicas. The leader keeps the limits and whether a spend limit is reached in
 * memory, refreshed every `checkIntervalMs` (and at once for changes made on this replica).
 */
export class QuotaService {
  private limits = new Map<string, AccountQuotaRecord>()
  private readonly reached = new Map<string, QuotaBreach>()
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private enforcer: SpendEnforcer | null = null

  constructor(private readonly o: QuotaServiceOptions) {
    o.fleet.setAdmission((owner, gpus, held) => this.admission(owner, gpus, held))
  }

  /** Starts the leader's checks: quotas re-read, spend summed, limits reached enforced. */
  async start(enforcer: SpendEnforcer): Promise<void> {
    this.enforcer = enforcer
    await this.check()
    this.timer = setInterval(() => void this.check(), this.o.checkIntervalMs)
    this.timer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    this.enforcer = null
    await this.running
  }

  /** Re-reads every quota and sums spend once now (tests wait for this instead of the interval). */
  check(): Promise<void> {
    if (this.running) return this.running
    this.running = this.checkOnce()
      .catch((err) => this.o.log.error({ err }, 'quota check failed; the last limits read stay in force'))
      .finally(() => {
        this.running = undefined
      })
    return this.running
  }

  private async checkOnce(): Promise<void> {
    const { store, clock, log } = this.o
    this.limits = new Map((await store.quotas.list()).map((q) => [q.accountId, q]))
    const limited = [...this.limits.values()].filter(
      (q) => q.spendPerHourMicros !== null || q.spendPerMonthMicros !== null,
    )
    const open = limited.length ? await store.usage.listOpen() : []
    for (const id of [...this.reached.keys()]) if (!limited.some((q) => q.accountId === id)) this.reached.delete(id)
    for (const q of limited) {
      const spend = await this.spend(q.accountId, clock.now(), open)
      const breach = spendReached(q, { spendPerHour: spend.hour, spendPerMonth: spend.month })
      const was = this.reached.get(q.accountId)
      if (!breach) {
        if (was) log.info({ accountId: q.accountId }, 'spend limit no longer reached: new starts allowed again')
        this.reached.delete(q.accountId)
        continue
      }
      this.reached.set(q.accountId, breach)
      if (was?.quota === breach.quota) continue
      const why = describeBreach(breach)
      log.warn({ accountId: q.accountId, quota: breach.quota, atSpendLimit: q.atSpendLimit }, why)
      await this.enforcer?.atSpendLimit(q.accountId, q.atSpendLimit, why)
    }
  }

  /** Spend of an account this UTC hour and this UTC month, micro-dollars: closed intervals' roll-ups plus what runs now. */
  async spend(accountId: string, now: number, open?: Awaited<ReturnType<Store['usage']['listOpen']>>) {
    const { usage } = this.o.store
    const hourFrom = bucketStart(now, 'hour')
    const monthFrom = bucketStart(now, 'month')
    const sum = (rows: Array<{ amounts: Record<string, Micros> }>) =>
      rows.reduce((t, r) => t + Object.values(r.amounts).reduce((a, b) => a + b, 0), 0)
    const filter = { accountId, products: PRODUCTS }
    let hour = sum(await usage.sumRollup(filter, hourFrom, nextBucket(hourFrom, 'hour'), { size: 'hour', by: [] }))
    let month = sum(await usage.sumRollup(filter, monthFrom, nextBucket(monthFrom, 'month'), { size: 'month', by: [] }))
    for (const i of open ?? (await usage.listOpen())) {
      if (i.accountId !== accountId) continue
      for (const p of intervalPieces(i, hourFrom, nextBucket(hourFrom, 'hour'), 'hour', now)) hour += p.amount
      for (const p of intervalPieces(i, monthFrom, nextBucket(monthFrom, 'month'), 'month', now)) month += p.amount
    }
    return { hour, month }
  }

  /** The fleet's admission (see Fleet.setAdmission): a reason starting QUOTA_PREFIX, or null. */
  private admission(owner: AllocationOwner, gpus: number, held: { gpus: number; workers: number }): string | null {
    const b = this.breachOf(owner, gpus, held)
    return b ? `${QUOTA_PREFIX}${describeBreach(b)}` : null
  }

  private breachOf(owner: AllocationOwner, gpus: number, held: { gpus: number; workers: number }): QuotaBreach | null {
    const spent = this.reached.get(owner.accountId)
    if (spent) return spent
    const q = this.limits.get(owner.accountId)
    return wouldPass(q, held, { gpus, workers: owner.kind === 'worker' ? 1 : 0 })
  }

  /** Refuses (QuotaExceeded) a pod start that would pass the GPU quota or comes at a spend limit; on the leader. */
  admitPodStart(accountId: string, gpus: number, what = 'pod start'): void {
    const b = this.breachOf({ accountId, kind: 'pod' }, gpus, this.o.fleet.heldBy(accountId))
    if (b) throw new QuotaExceeded(b, what)
  }

  /**
   * Refuses new pods past the pods quota, or whose start would be refused (see admitPodStart): one pod, or a
   * cluster's members at once (`pods` of them, `gpus` in all).
   */
  async admitPodCreate(accountId: string, gpus: number, opts: { pods?: number; what?: string } = {}): Promise<void> {
    const what = opts.what ?? 'pod create'
    const q = await this.fresh(accountId)
    const pods = (await this.o.store.pods.list({ accountId, includeClusterPods: true })).filter(
      (p) => p.status !== 'TERMINATED',
    ).length
    const b = wouldPass(q, { pods }, { pods: opts.pods ?? 1 })
    if (b) throw new QuotaExceeded(b, what)
    this.admitPodStart(accountId, gpus, what)
  }

  /**
   * The pods quota again, inside the transaction that inserts the pods (admitPodCreate answers first, before
   * placement; this one decides): racing creates cannot all pass the last pod.
   */
  async admitPods(tx: Collections, accountId: string, pods: number, what: string): Promise<void> {
    const q = await tx.quotas.get(accountId)
    if (!q || q.pods === null) return
    const held = (await tx.pods.list({ accountId, includeClusterPods: true })).filter(
      (p) => p.status !== 'TERMINATED',
    ).length
    const b = wouldPass(q, { pods: held }, { pods })
    if (b) throw new QuotaExceeded(b, what)
  }

  /**
   * Inside the transaction that writes the endpoint: refuses a create, or a PATCH raising workers.max, that
   * would pass the workers quota (workers.max summed over the account's endpoints), and a workers.min that
   * alone needs more GPUs than the GPU quota. Read in the transaction: on PostgreSQL (SERIALIZABLE) two
   * replicas cannot both pass the last worker.
   */
  async admitEndpoint(tx: Collections, before: EndpointRecord | null, after: EndpointRecord): Promise<void> {
    const q = await tx.quotas.get(after.accountId)
    if (!q) return
    const what = before ? 'endpoint update' : 'endpoint create'
    const raise = after.workers.max - (before?.workers.max ?? 0)
    if (raise > 0 && q.workers !== null) {
      const workers = (await tx.endpoints.list(after.accountId))
        .filter((e) => e.id !== after.id)
        .reduce((t, e) => t + e.workers.max, before?.workers.max ?? 0)
      const b = wouldPass(q, { workers }, { workers: raise })
      if (b) throw new QuotaExceeded(b, what)
    }
    const minGpus = after.gpu ? after.workers.min * after.gpu.count : 0
    const beforeMin = before?.gpu ? before.workers.min * before.gpu.count : 0
    if (q.gpus !== null && minGpus > q.gpus && minGpus > beforeMin)
      throw new QuotaExceeded({ quota: 'gpus', use: 0, requested: minGpus, limit: q.gpus }, `${what} (workers.min)`)
  }

  /**
   * Refuses a network volume create or grow past the networkVolumeGb quota. Read in the transaction that writes
   * the volume, as admitEndpoint: concurrent creates cannot all pass the last GB (the SQLite store runs one
   * transaction at a time; PostgreSQL's SERIALIZABLE refuses the second).
   */
  async admitVolume(tx: Collections, accountId: string, addGb: number, what: string): Promise<void> {
    const q = await tx.quotas.get(accountId)
    if (!q || q.networkVolumeGb === null || addGb <= 0) return
    const gb = (await tx.networkVolumes.list(accountId)).reduce((t, v) => t + v.size, 0)
    const b = wouldPass(q, { networkVolumeGb: gb }, { networkVolumeGb: addGb })
    if (b) throw new QuotaExceeded(b, what)
  }

  /** The account's record read from the store now (another replica may have set it), kept for the fleet's checks. */
  private async fresh(accountId: string): Promise<AccountQuotaRecord | undefined> {
    const q = await this.o.store.quotas.get(accountId)
    if (q) this.limits.set(accountId, q)
    else this.limits.delete(accountId)
    return q
  }

  // ---- admin and the account's view ----

  /** Sets the whole set of an account's quotas (admin); returns the view. */
  async set(account: string, body: SetQuotas): Promise<AccountQuotas> {
    const a = await this.account(account)
    const rec: AccountQuotaRecord = {
      accountId: a.id,
      gpus: body.gpus ?? null,
      workers: body.workers ?? null,
      pods: body.pods ?? null,
      networkVolumeGb: body.networkVolumeGb ?? null,
      spendPerHourMicros: body.spendPerHour == null ? null : usdToMicros(body.spendPerHour),
      spendPerMonthMicros: body.spendPerMonth == null ? null : usdToMicros(body.spendPerMonth),
      atSpendLimit: body.atSpendLimit ?? 'FINISH',
      guaranteedGpus: body.guaranteedGpus ?? null,
      weight: body.weight ?? 1,
      updatedAt: iso(this.o.clock.now()),
    }
    await this.o.store.quotas.put(rec)
    this.limits.set(a.id, rec)
    // A new spend limit may be reached already: found (and enforced) at the next check; this replica checks now.
    if (this.enforcer) await this.check()
    return this.view(a.id)
  }

  /** Removes an account's quotas (no limits, weight 1). */
  async remove(account: string): Promise<void> {
    const a = await this.account(account)
    if (!(await this.o.store.quotas.delete(a.id))) throw notFound('quotas of account', account)
    this.limits.delete(a.id)
    this.reached.delete(a.id)
  }

  /** Every account's use against its limits (admin). */
  async list(): Promise<AccountQuotas[]> {
    return Promise.all((await this.o.store.accounts.list()).map((a) => this.view(a.id)))
  }

  async get(account: string): Promise<AccountQuotas> {
    return this.view((await this.account(account)).id)
  }

  /** Use against limits of one account: GET /v2/account/quotas. */
  async view(accountId: string): Promise<AccountQuotas> {
    const { store, clock } = this.o
    const a = await store.accounts.get(accountId)
    if (!a) throw notFound('account', accountId)
    const q = await store.quotas.get(accountId)
    const held = await this.heldFromStore(accountId)
    const endpoints = await store.endpoints.list(accountId)
    const pods = (await store.pods.list({ accountId, includeClusterPods: true })).filter(
      (p) => p.status !== 'TERMINATED',
    )
    const volumes = await store.networkVolumes.list(accountId)
    const spend = await this.spend(accountId, clock.now())
    const reached = spendReached(q, { spendPerHour: spend.hour, spendPerMonth: spend.month })
    const usd = (m: number | null | undefined) => (m == null ? null : microsToUsd(m))
    return {
      accountId,
      accountName: a.name,
      quotas: {
        gpus: { use: held, limit: q?.gpus ?? null },
        workers: { use: endpoints.reduce((t, e) => t + e.workers.max, 0), limit: q?.workers ?? null },
        pods: { use: pods.length, limit: q?.pods ?? null },
        networkVolumeGb: { use: volumes.reduce((t, v) => t + v.size, 0), limit: q?.networkVolumeGb ?? null },
        spendPerHour: { use: microsToUsd(spend.hour), limit: usd(q?.spendPerHourMicros) },
        spendPerMonth: { use: microsToUsd(spend.month), limit: usd(q?.spendPerMonthMicros) },
      },
      atSpendLimit: q?.atSpendLimit ?? 'FINISH',
      spendLimitReached: reached ? (reached.quota as 'spendPerHour' | 'spendPerMonth') : null,
      fairShare: {
        guaranteedGpus: q?.guaranteedGpus ?? null,
        weight: q?.weight ?? 1,
        borrowedGpus: borrowedGpus({ held, guaranteed: q?.guaranteedGpus ?? null }),
      },
      updatedAt: q?.updatedAt ?? null,
    }
  }

  /**
   * The fair-share standing of every account holding GPUs or with a quota record, from the leader's ledger
   * (what placement decides on).
   */
  standings(accountIds: Iterable<string>): ShareStanding[] {
    const ids = new Set([...accountIds, ...this.limits.keys()])
    return [...ids].map((accountId) => {
      const q = this.limits.get(accountId)
      return {
        accountId,
        held: this.o.fleet.heldBy(accountId).gpus,
        guaranteed: q?.guaranteedGpus ?? null,
        weight: q?.weight ?? 1,
      }
    })
  }

  /** Accounts in the order they get scarce GPUs (see shareOrder). */
  order(accountIds: Iterable<string>): string[] {
    return shareOrder(this.standings(accountIds))
  }

  /**
   * GPUs an account's placed workers and pods hold, from the store: any replica can answer the view (the
   * leader's placement counts in its ledger, which holds the same allocations).
   */
  private async heldFromStore(accountId: string): Promise<number> {
    const { store } = this.o
    const workers = (await store.workers.listActive())
      .filter((w) => w.accountId === accountId && w.hostId !== null && w.gpuTypeId !== null)
      .reduce((t, w) => t + w.gpuCount, 0)
    const pods = (await store.pods.listHoldingCapacity())
      .filter((p) => p.accountId === accountId && p.placement && p.gpu)
      .reduce((t, p) => t + (p.placement?.gpuIndices.length ?? 0), 0)
    return workers + pods
  }

  private async account(ref: string) {
    const { accounts } = this.o.store
    const a = (await accounts.get(ref)) ?? (await accounts.getByName(ref))
    if (!a) throw notFound('account', ref)
    return a
  }
}
