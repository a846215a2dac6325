import { EventEmitter } from 'node:events'

/**
 * In-process notifications that waiting requests sleep on, so long-polls (runsync, status-sync, stream,
 * job-take, job-stop) wake the moment something changes instead of polling the store.
 *
 * Keys: `job:<id>` (a job changed), `queue:<endpointId>` (a job became takeable), `stop:<workerId>` (a
 * worker has jobs to stop). It also keeps, per worker, the ids of jobs it must stop.
 */
export class JobEvents {
  private readonly emitter = new EventEmitter()
  private readonly subs = new Set<Subscription>()
  private readonly stops = new Map<string, Set<string>>()
  private closedFlag = false

  constructor() {
    // One listener per waiting request; thousands are normal under load.
    this.emitter.setMaxListeners(0)
  }

  /** True once close() ran: waits return at once so in-flight long-polls finish. */
  get closed(): boolean {
    return this.closedFlag
  }

  jobChanged(jobId: string): void {
    this.emitter.emit(`job:${jobId}`)
  }

  /** Ids of the jobs some request is waiting on now (runsync, status-sync, stream). */
  watchedJobs(): string[] {
    const ids: string[] = []
    for (const name of this.emitter.eventNames()) if (typeof name === 'string' && name.startsWith('job:')) ids.push(name.slice(4))
    return ids
  }

  /** A job of `endpointId` can be taken (submitted, retried or requeued). */
  queued(endpointId: string): void {
    this.emitter.emit(`queue:${endpointId}`)
    // onQueued listeners (the scaler) hear once per endpoint per turn of the event loop, not once per job:
    // a burst of submissions costs one scaling decision.
    if (this.queuedSoon.size === 0) setImmediate(this.flushQueued)
    this.queuedSoon.add(endpointId)
  }

  private readonly queuedSoon = new Set<string>()
  private readonly flushQueued = () => {
    const ids = [...this.queuedSoon]
    this.queuedSoon.clear()
    for (const id of ids) this.emitter.emit('queued', id)
  }

  /** Listens to queued() calls, coalesced per endpoint within one turn of the event loop (the scaler reacts to submissions at once). */
  onQueued(listener: (endpointId: string) => void): () => void {
    this.emitter.on('queued', listener)
    return () => this.emitter.off('queued', listener)
  }

  /** Something about a worker changed (it is draining): wakes its job-take long-poll. */
  workerChanged(workerId: string): void {
    this.emitter.emit(`worker:${workerId}`)
  }

  /** A running job left its worker (finished, cancelled, timed out, deleted, requeued). */
  jobLeftWorker(workerId: string, jobId: string): void {
    this.emitter.emit('left', workerId, jobId)
  }

  onJobLeftWorker(listener: (workerId: string, jobId: string) => void): () => void {
    this.emitter.on('left', listener)
    return () => this.emitter.off('left', listener)
  }

  /** Asks `workerId` to stop running `jobId` (delivered through its job-stop long-poll). */
  requestStop(workerId: string, jobId: string): void {
    const set = this.stops.get(workerId) ?? new Set<string>()
    set.add(jobId)
    this.stops.set(workerId, set)
    this.emitter.emit(`stop:${workerId}`)
  }

  /** The jobs `workerId` must stop, removed from the pending list. */
  takeStops(workerId: string): string[] {
    const set = this.stops.get(workerId)
    this.stops.delete(workerId)
    return set ? [...set] : []
  }

  /** Forgets a worker's pending stops (it is gone). */
  forgetWorker(workerId: string): void {
    this.stops.delete(workerId)
  }

  /**
   * Starts listening to `keys` now, before the caller checks the state, so a change between the check
   * and the wait is not missed. Close it when done.
   */
  subscribe(...keys: string[]): Subscription {
    const sub = new Subscription(this.emitter, keys, () => this.subs.delete(sub), () => this.closedFlag)
    this.subs.add(sub)
    return sub
  }

  /** Releases every waiting request; later waits return at once. */
  close(): void {
    this.closedFlag = true
    for (const s of [...this.subs]) s.fire()
  }
}

/** A registration on some keys; `wait` resolves when one fired since the last wait, or after `ms`. */
export class Subscription {
  private fired = false
  private wake: (() => void) | undefined
  private readonly listener = () => this.fire()

  constructor(
    private readonly emitter: EventEmitter,
    private readonly keys: string[],
    private readonly onClose: () => void,
    private readonly isClosed: () => boolean,
  ) {
    for (const k of keys) emitter.on(k, this.listener)
  }

  /** @internal */
  fire(): void {
    this.fired = true
    this.wake?.()
  }

  /** Resolves true when an event came (or came since the last wait), false after `ms` without one. */
  async wait(ms: number): Promise<boolean> {
    if (!this.fired && !this.isClosed() && ms > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms)
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.wake = undefined
    }
    const fired = this.fired
    this.fired = false
    return fired
  }

  close(): void {
    for (const k of this.keys) this.emitter.off(k, this.listener)
    this.onClose()
  }
}
