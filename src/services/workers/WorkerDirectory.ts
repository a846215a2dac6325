import { timingSafeEqual } from 'node:crypto'
import { describe, type FleetView } from './FleetView.js'
import type { LiveWorker } from './LiveWorker.js'
import type { WorkerContext } from './WorkerContext.js'
import type { WorkerLifecycle } from './WorkerLifecycle.js'
import { tokenHash } from './workerRecord.js'
import type { TakeTurn } from './types.js'

/**
 * The fleet's workers as the worker protocol and the read models see them from this process: the leader answers
 * from its live workers (LeaderDirectory), a follower from the leader's broadcasts and the store
 * (FollowerDirectory). WorkerService swaps them on `lead()` and `follow()`.
 */
export interface WorkerDirectory {
  /** True when `token` is the protocol key of live worker `workerId` of endpoint `endpointId`. */
  authenticate(endpointId: string, workerId: string, token: string | undefined): boolean | Promise<boolean>
  /** Any protocol call is a sign of life; the first one makes the worker ready. */
  contact(workerId: string): void
  /** True when the worker gets no more jobs and should not wait for one (it is being stopped, or unknown). */
  isDraining(workerId: string): boolean
  /** One pass of a worker's job-take (see `WorkerService.takeTurn`). */
  takeTurn(workerId: string): TakeTurn
  /** Records jobs (or proxied requests) a worker took; a parked worker given one is active again. */
  jobsTaken(workerId: string, jobIds: string[]): void
  /** The worker asked to be replaced (stopPod): stop it once its running jobs have ended. */
  recycle(workerId: string): void
  /** The live workers of an endpoint (or of all); on a follower, the leader's as it last described them. */
  workers(endpointId?: string): LiveWorker[]
  /** Tells followers how a worker stands now: only the leader has anything to tell. */
  describe(w: LiveWorker): void
  /**
   * Where the calls that followers pass on through the change feed (signs of life, jobs taken, stopPod) are
   * acted on: the leader's live workers; null on a follower (they are the leader's to act on).
   */
  readonly relayed: Pick<WorkerDirectory, 'contact' | 'jobsTaken' | 'recycle'> | null
}

/**
 * The leader's directory: this process's live workers (the `live` map), which it moves through WorkerLifecycle
 * and describes to the followers (`worker.state` on the change feed).
 */
export class LeaderDirectory implements WorkerDirectory {
  readonly relayed = this
  private readonly described = new Set<LiveWorker>()
  private describeTimer: NodeJS.Timeout | null = null

  constructor(
    private readonly ctx: WorkerContext<'feed'>,
    private readonly lifecycle: Pick<WorkerLifecycle, 'touch' | 'jobsTaken' | 'retire'>,
  ) {}

  /** Starts describing every live worker, now and each second (with a change feed). */
  start(): void {
    if (this.ctx.deps.feed && !this.describeTimer) {
      // Every live worker is described each second: a follower that started late, or missed a message, catches up.
      // At once too: those adopted before this directory answered were not described as they were taken back.
      const all = () => {
        for (const w of this.ctx.live.values()) this.describe(w)
      }
      all()
      this.describeTimer = setInterval(all, 1000)
      this.describeTimer.unref()
    }
  }

  /** Stops describing (this process no longer leads); descriptions not yet sent are dropped. */
  stop(): void {
    if (this.describeTimer) clearInterval(this.describeTimer)
    this.describeTimer = null
    this.described.clear()
  }

  authenticate(endpointId: string, workerId: string, token: string | undefined): boolean {
    const w = this.ctx.live.get(workerId)
    if (!w?.handle || !w.record || !token || w.endpointId !== endpointId) return false
    return timingSafeEqual(Buffer.from(w.record.tokenHash, 'hex'), Buffer.from(tokenHash(token), 'hex'))
  }

  contact(workerId: string): void {
    const w = this.ctx.live.get(workerId)
    if (w?.handle) this.lifecycle.touch(w)
  }

  isDraining(workerId: string): boolean {
    const w = this.ctx.live.get(workerId)
    return !w?.handle || w.phase === 'stopping' || w.phase === 'unhealthy'
  }

  takeTurn(workerId: string): TakeTurn {
    const w = this.ctx.live.get(workerId)
    if (!w?.handle) return 'drain'
    this.lifecycle.touch(w)
    if (w.phase === 'stopping' || w.phase === 'unhealthy') return 'drain'
    return w.phase === 'parked' || w.retiring ? 'hold' : 'take'
  }

  jobsTaken(workerId: string, jobIds: string[]): void {
    this.lifecycle.jobsTaken(workerId, jobIds)
  }

  recycle(workerId: string): void {
    this.lifecycle.retire(workerId, 'the worker asked to be replaced (stopPod)')
  }

  workers(endpointId?: string): LiveWorker[] {
    return endpointId === undefined ? [...this.ctx.live.values()] : this.ctx.live.ofEndpoint(endpointId)
  }

  /** Tells followers how a worker stands now (coalesced per turn of the event loop). */
  describe(w: LiveWorker): void {
    const feed = this.ctx.deps.feed
    if (!feed || this.ctx.detached.has(w)) return
    if (this.described.size === 0) {
      setImmediate(() => {
        for (const d of this.described) feed.publish('worker.state', describe(d, this.ctx.live.get(d.id) !== d))
        this.described.clear()
      })
    }
    this.described.add(w)
  }
}

/**
 * A follower's directory: it holds no live worker and answers the protocol through FleetView (keys from the
 * store, phases from the leader's broadcasts); what workers do here goes to the leader through the change feed.
 */
export class FollowerDirectory implements WorkerDirectory {
  readonly relayed = null

  constructor(private readonly view: FleetView) {}

  authenticate(endpointId: string, workerId: string, token: string | undefined): boolean | Promise<boolean> {
    return token ? this.view.authenticate(endpointId, workerId, token) : false
  }

  contact(workerId: string): void {
    this.view.contact(workerId)
  }

  isDraining(workerId: string): boolean {
    return this.view.isDraining(workerId)
  }

  takeTurn(workerId: string): TakeTurn {
    // A follower answers from the leader's broadcast (see FleetView) and passes the contact on.
    this.view.contact(workerId)
    return this.view.isDraining(workerId) ? 'drain' : this.view.isHeld(workerId) ? 'hold' : 'take'
  }

  jobsTaken(workerId: string, jobIds: string[]): void {
    this.view.jobsTaken(workerId, jobIds)
  }

  recycle(workerId: string): void {
    this.view.recycle(workerId)
  }

  workers(endpointId?: string): LiveWorker[] {
    return this.view.workers(endpointId)
  }

  describe(): void {}
}
