import type { Allocation, Fleet, PlacementFailure, PlacementRequest } from '../../catalog/Fleet.js'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import { placementRequest } from '../../domain/workers/placement.js'
import { borrowedGpus, mayReclaim, reclaimFrom, type ShareStanding } from '../../domain/quotas/fairShare.js'
import { QUOTA_PREFIX } from '../../domain/quotas/quotas.js'
import type { LiveWorker } from './LiveWorker.js'

/** A parked worker as placement weighs it: what it holds, its FlashBoot priority, since when it is parked. */
export type ParkedWorker = Pick<LiveWorker, 'id' | 'allocation' | 'parkedPriority' | 'phaseSince'> &
  Partial<Pick<LiveWorker, 'accountId'>>

export interface WorkerPlacerOptions {
  /** The capacity ledger capacity is taken from and given back to. */
  fleet: Pick<Fleet, 'reserve' | 'release'>
  /** GPU pools and the types in each (CatalogService.pools). */
  pools: () => Map<string, string[]>
  /** Parked (FlashBoot) workers of every endpoint: a cache that gives way when capacity is needed. */
  parked: () => ParkedWorker[]
  /** Stops an evicted parked worker (its capacity is already given back). */
  evict: (w: ParkedWorker, why: string) => void
  /** Fair share between accounts (issue 36, domain/quotas/fairShare.ts); absent: first come, first served. */
  share?: FairShareOptions
}

/** A placed worker as fair share weighs it when GPUs are taken back. */
export type LendingWorker = Pick<LiveWorker, 'id' | 'accountId' | 'allocation' | 'retiring' | 'startedAt'> & {
  jobs: { size: number }
}

/** What placement needs for fair share. */
export interface FairShareOptions {
  /** The standing (GPUs held, guarantee, weight) of these accounts, from the fleet ledger. */
  standings: (accountIds: Iterable<string>) => ShareStanding[]
  /** Placed, unparked workers of every endpoint. */
  placed: () => LendingWorker[]
  /** Retires a worker whose GPUs are taken back (it finishes its job first). */
  retire: (w: LendingWorker, why: string) => void
  /** Whether worker `id` still waits for placement (THROTTLED): its claim on GPUs being given back holds until then. */
  waiting: (id: string) => boolean
}

/**
 * Takes capacity for a worker from the fleet ledger: the endpoint's GPU types in order (pools minus
 * exclusions, hosts in its data centers with a fitting CUDA version) or its CPU configurations in order.
 * When nothing is free, parked workers that hold fitting capacity are evicted (FLASHBOOT ones before
 * PRIORITY_FLASHBOOT ones, the longest parked first) until the worker fits; when an account quota refuses
 * it, the account's own parked workers are evicted the same way.
 */
export class WorkerPlacer {
  /**
   * Throttled workers of accounts taking back their guaranteed share, by worker id: the GPUs given back are
   * theirs, not lent again to an account beyond its guarantee in the meantime.
   */
  private readonly claims = new Map<string, { accountId: string; typeIds: string[] }>()

  constructor(private readonly o: WorkerPlacerOptions) {}

  /** Takes capacity for worker `id` of `ep`, evicting parked workers if that makes room; else says why nothing fits. */
  reserve(
    id: string,
    ep: Pick<EndpointRecord, 'id' | 'gpu' | 'cpu' | 'dataCenterIds'> & Partial<Pick<EndpointRecord, 'accountId'>>,
  ): Allocation | PlacementFailure {
    const { fleet } = this.o
    const req = placementRequest(ep, this.o.pools())
    const held = ep.accountId ? this.heldForClaim(ep.accountId, req) : null
    if (held) return held
    let result = fleet.reserve(id, req)
    if (!('reason' in result)) {
      this.claims.delete(id)
      return result
    }
    // Refused by a quota: the account's own parked workers count against it, and give way as they do for capacity.
    const quota = result.reason.startsWith(QUOTA_PREFIX)
    const candidates = this.o
      .parked()
      .filter((w) => w.allocation && (quota ? w.accountId === ep.accountId : fits(w.allocation, req)))
      .sort((a, b) => Number(a.parkedPriority) - Number(b.parkedPriority) || a.phaseSince - b.phaseSince)
    for (const w of candidates) {
      fleet.release(w.id)
      this.o.evict(w, `evicted from parking: its capacity is needed by a worker of endpoint ${ep.id}`)
      result = fleet.reserve(id, req)
      if (!('reason' in result)) {
        this.claims.delete(id)
        return result
      }
    }
    const reclaiming = ep.accountId ? this.reclaim(id, ep.accountId, req, result.reason) : null
    return reclaiming ? { reason: `${result.reason}; ${reclaiming}` } : result
  }

  /**
   * Fair share: when the account is within its guarantee and no GPU is free, GPUs that other accounts borrowed
   * beyond theirs are taken back (their workers retired, see reclaimFrom); the worker stays THROTTLED and is
   * placed once they stop. Says what is being given back, or null when nothing is.
   */
  private reclaim(id: string, accountId: string, req: PlacementRequest, reason: string): string | null {
    const share = this.o.share
    if (!share || !req.gpu || reason.startsWith(QUOTA_PREFIX)) return null
    const workers = share.placed().filter((w) => w.allocation?.gpuTypeId && fits(w.allocation, req))
    const standings = share.standings([accountId, ...workers.map((w) => w.accountId)])
    const me = standings.find((s) => s.accountId === accountId)
    const need = req.gpu.count
    if (!me || !mayReclaim(me, need)) return null
    this.claims.set(id, { accountId, typeIds: req.gpu.typeIds })
    // GPUs already on their way back (retiring workers of other accounts) count first.
    const coming = workers
      .filter((w) => w.retiring && w.accountId !== accountId)
      .reduce((t, w) => t + (w.allocation?.gpuIndices.length ?? 0), 0)
    if (coming >= need) return `${coming} GPU(s) being given back to its guaranteed share`
    const victims = reclaimFrom(
      need - coming,
      accountId,
      standings,
      workers
        .filter((w) => !w.retiring)
        .map((w) => ({
          id: w.id,
          accountId: w.accountId,
          gpus: w.allocation?.gpuIndices.length ?? 0,
          busy: w.jobs.size > 0,
          startedAt: w.startedAt,
        })),
    )
    if (victims.length === 0) return null
    const byId = new Map(workers.map((w) => [w.id, w]))
    for (const v of victims)
      share.retire(
        byId.get(v.id)!,
        // Read by the worker's own account: the other account is not named (no tenant learns of another).
        `fair share: this account gives back a GPU it borrowed beyond its guarantee to another account, which is within its own`,
      )
    // Read by the claiming account: the workers retiring are another account's, so neither they nor it are named.
    return `taking back ${victims.reduce((t, v) => t + v.gpus, 0)} borrowed GPU(s) for its guaranteed share (another account's workers retire)`
  }

  /**
   * A GPU being given back to another account's guaranteed share is not lent again: refused when this
   * placement would put the account beyond its own guarantee while such a claim on fitting GPUs waits.
   */
  private heldForClaim(accountId: string, req: PlacementRequest): PlacementFailure | null {
    const share = this.o.share
    const gpu = req.gpu
    if (!share || !gpu || this.claims.size === 0) return null
    for (const id of [...this.claims.keys()]) if (!share.waiting(id)) this.claims.delete(id)
    const claim = [...this.claims.values()].find(
      (c) => c.accountId !== accountId && c.typeIds.some((t) => gpu.typeIds.includes(t)),
    )
    if (!claim) return null
    const [me] = share.standings([accountId]).filter((s) => s.accountId === accountId)
    if (me && borrowedGpus({ held: me.held + gpu.count, guaranteed: me.guaranteed }) === 0) return null
    return {
      reason: `the GPUs being freed go to another account's guaranteed share first (fair share); this account is beyond its own`,
    }
  }
}

/** Whether giving back `a` could make room for `req` (same kind of capacity, an acceptable data center). */
function fits(a: Allocation, req: PlacementRequest): boolean {
  if (req.dataCenterIds.length > 0 && !req.dataCenterIds.includes(a.dataCenterId)) return false
  return req.gpu ? a.gpuTypeId !== null && req.gpu.typeIds.includes(a.gpuTypeId) : a.vcpus > 0
}
