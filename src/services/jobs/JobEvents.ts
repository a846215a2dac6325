import { EventEmitter } from 'node:events'
import type { ChangeFeed } from '../../replicas/ChangeFeed.js'
import type { JobRecord } from '../../store/JobStore.js'

/**
 * In-process notifications that waiting requests sleep on, so long-polls (runsync, status-sync, stream,
 * job-take, job-stop) wake the moment something changes instead of polling the store.
 *
 * Keys: `job:<id>` (a job changed), `queue:<endpointId>` (a job became takeable), `stop:<workerId>` (a
 * worker has jobs to stop). It also keeps, per worker, the ids of jobs it must stop.
 *
 * With several control-plane processes on one store, every notification is also sent to the others through
 * the change feed, and theirs are emitted here as if made locally: a job submitted on replica A wakes a
 * worker long-polling on replica B; a result posted on B wakes a /runsync waiting on A. A gap in the feed
 * wakes every waiter, which re-reads the store. With one process (SoleChangeFeed) nothing is sent.
 */
export class JobEvents {
  private readonly emitter = new EventEmitter()
  private readonly subs = new Set<Subscription>()
  private readonly stops = new Map<string, Set<string>>()
  private closedFlag = false

  constructor(private readonly feed?: ChangeFeed) {
    // One listener per waiting request; thousands are normal under load.
    this.emitter.setMaxListeners(0)
    if (!feed) return
    feed.on('job', (id) => this.emitter.emit(`job:${id}`))
    feed.on('queue', (id) => this.emitQueued(id))
    feed.on('worker', (id) => this.emitter.emit(`worker:${id}`))
    feed.on('left', (p) => {
      const [workerId, jobId] = p.split(' ')
      this.emitter.emit('left', workerId, jobId)
    })
    feed.on('stop', (p) => {
      const [workerId, jobId] = p.split(' ')
      this.addStop(workerId, jobId)
    })
    feed.on('forget', (id) => this.stops.delete(id))
    feed.on('stops.taken', (id) => this.stops.delete(id))
    feed.onGap(() => {
      for (const s of [...this.subs]) s.fire()
    })
  }

  /** True once close() ran: waits return at once so in-flight long-polls finish. */
  get closed(): boolean {
    return this.closedFlag
  }

  /**
   * Wakes the requests waiting on a job. `job`, the record as the change wrote it, spares a waiter that
   * wants only that (a /runsync on its job's final state) reading it back; other processes hear the id alone.
   */
  jobChanged(jobId: string, job?: JobRecord): void {
    this.emitter.emit(`job:${jobId}`, job)
    this.feed?.publish('job', jobId)
  }

  /** Ids of the jobs some request is waiting on now (runsync, status-sync, stream). */
  watchedJobs(): string[] {
    const ids: string[] = []
    for (const name of this.emitter.eventNames())
      if (typeof name === 'string' && name.startsWith('job:')) ids.push(name.slice(4))
    return ids
  }

  /** A job of `endpointId` can be taken (submitted, retried or requeued); `lowPriority` as the job's policy says. */
  queued(endpointId: string, lowPriority = false): void {
    this.emitter.emit('job.queued', endpointId, lowPriority)
    this.emitQueued(endpointId)
    this.feed?.publish('queue', endpointId)
  }

  private emitQueued(endpointId: string): void {
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

  /**
   * Listens to every queued() call of this process, as it is made: before the job's waiting takers run (a
   * parked worker can be taken back first, see Autoscaler). Jobs queued through another process are not told.
   */
  onJobQueued(listener: (endpointId: string, lowPriority: boolean) => void): () => void {
    this.emitter.on('job.queued', listener)
    return () => this.emitter.off('job.queued', listener)
  }

  /** Something about a worker changed (it is draining): wakes its job-take long-poll. */
  workerChanged(workerId: string): void {
    this.emitter.emit(`worker:${workerId}`)
    this.feed?.publish('worker', workerId)
  }

  /** A running job left its worker (finished, cancelled, timed out, deleted, requeued). */
  jobLeftWorker(workerId: string, jobId: string): void {
    this.emitter.emit('left', workerId, jobId)
    this.feed?.publish('left', `${workerId} ${jobId}`)
  }

  onJobLeftWorker(listener: (workerId: string, jobId: string) => void): () => void {
    this.emitter.on('left', listener)
    return () => this.emitter.off('left', listener)
  }

  /** Asks `workerId` to stop running `jobId` (delivered through its job-stop long-poll). */
  requestStop(workerId: string, jobId: string): void {
    this.addStop(workerId, jobId)
    // Every process keeps the request: the worker's job-stop poll may reach any of them.
    this.feed?.publish('stop', `${workerId} ${jobId}`)
  }

  private addStop(workerId: string, jobId: string): void {
    const set = this.stops.get(workerId) ?? new Set<string>()
    set.add(jobId)
    this.stops.set(workerId, set)
    this.emitter.emit(`stop:${workerId}`)
  }

  /** The jobs `workerId` must stop, removed from the pending list (of every process). */
  takeStops(workerId: string): string[] {
    const set = this.stops.get(workerId)
    this.stops.delete(workerId)
    if (set) this.feed?.publish('stops.taken', workerId)
    return set ? [...set] : []
  }

  /** Forgets a worker's pending stops (it is gone). */
  forgetWorker(workerId: string): void {
    this.stops.delete(workerId)
    this.feed?.publish('forget', workerId)
  }

  /**
   * Starts listening to `keys` now, before the caller checks the state, so a change between the check
   * and the wait is not missed. Close it when done.
   */
  subscribe(...keys: string[]): Subscription {
    const sub = new Subscription(
      this.emitter,
      keys,
      () => this.subs.delete(sub),
      () => this.closedFlag,
    )
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
  private told: JobRecord | undefined
  private readonly listener = (job?: JobRecord) => {
    this.told = job
    this.fire()
  }

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

  /** The job record the last event carried (see JobEvents.jobChanged), once: undefined when it carried none. */
  takeJob(): JobRecord | undefined {
    const job = this.told
    this.told = undefined
    return job
  }

  close(): void {
    for (const k of this.keys) this.emitter.off(k, this.listener)
    this.onClose()
  }
}
