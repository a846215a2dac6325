import type { Allocation } from '../../catalog/Fleet.js'
import type { Clock } from '../../domain/clock.js'
import type { PriceBook } from '../../domain/billing/PriceBook.js'
import { meterKey, type UsageInterval, type UsageSubject } from '../../domain/billing/usage.js'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import type { Store } from '../../store/Store.js'
import type { Log } from '../log.js'
import type { PodTransition } from '../pods/PodEvents.js'
import { podUsage, volumeUsage, workerUsage } from './usageSubjects.js'

/** What WorkerService tells billing: a worker starts or stops being billed. Calls return at once. */
export interface WorkerMeter {
  /** The worker serves from now (called in, or taken back from parking). */
  workerBillable(w: { id: string; endpointId: string; accountId: string; allocation: Allocation | null }): void
  /** The worker stops being billed now (parked, or its process ended). */
  workerUnbillable(w: { id: string; endpointId: string }): void
}

/** What NetworkVolumeService tells billing; resolved once the ledger has the change. */
export interface VolumeMeter {
  volumeChanged(v: {
    id: string
    accountId: string
    size: number
    type: 'STANDARD' | 'HIGH_PERFORMANCE'
  }): Promise<void>
  volumeDeleted(volumeId: string): Promise<void>
}

export interface UsageMeterOptions {
  store: Store
  clock: Clock
  prices: PriceBook
  log: Log
  /** How often to note that the control plane is alive (see billingConfig.checkpointMs). */
  checkpointMs: number
}

/**
 * Writes the usage ledger as things start and stop. Each event takes its time from the clock when it
 * happens and is written in order by one queue, so callers on hot paths (a worker's first call) never wait
 * and a stop can never overtake its start. The ledger failing is logged, never passed on: billing must
 * not break the work it meters.
 */
export class UsageMeter implements WorkerMeter, VolumeMeter {
  /** Open intervals by meter key (resource part of a product). */
  private readonly open = new Map<string, UsageInterval[]>()
  private queue: Promise<void> = Promise.resolve()
  private timer: NodeJS.Timeout | null = null

  constructor(private readonly o: UsageMeterOptions) {}

  /**
   * At start, before anything is metered: closes the open intervals of what no longer runs at the last
   * time the control plane was known alive (at most `checkpointMs` before a crash; exactly the stop time
   * after a clean stop), resumes those of what still runs (no gap, nothing twice), reopens at the current
   * price what runs at another price now, and opens what runs without an interval (e.g. volumes created
   * before billing existed).
   */
  async recover(running: UsageSubject[]): Promise<void> {
    const { store, clock, log } = this.o
    const now = clock.now()
    const lastAlive = Math.min((await store.usage.lastAlive()) ?? now, now)
    const wanted = new Map<string, UsageSubject[]>()
    for (const s of running) wanted.set(meterKey(s), [...(wanted.get(meterKey(s)) ?? []), s])
    const open = new Map<string, UsageInterval[]>()
    for (const i of await store.usage.listOpen()) open.set(meterKey(i), [...(open.get(meterKey(i)) ?? []), i])
    let closed = 0
    let resumed = 0
    for (const [key, intervals] of open) {
      const subjects = wanted.get(key)
      if (!subjects) {
        await store.usage.close(
          intervals.map((i) => i.id),
          lastAlive,
        )
        closed += intervals.length
      } else if (!sameUsage(intervals, subjects)) {
        await store.usage.close(
          intervals.map((i) => i.id),
          now,
        )
      } else {
        this.open.set(key, intervals)
        resumed += intervals.length
      }
    }
    for (const [key, subjects] of wanted)
      if (!this.open.has(key)) this.open.set(key, await Promise.all(subjects.map((s) => store.usage.open(s, now))))
    await store.usage.noteAlive(now)
    log.info({ closed, resumed, lastAlive: new Date(lastAlive).toISOString() }, 'usage ledger recovered')
  }

  /** Notes every `checkpointMs` that the control plane is alive. */
  start(): void {
    this.timer = setInterval(
      () => this.enqueue(() => this.o.store.usage.noteAlive(this.o.clock.now())),
      this.o.checkpointMs,
    )
    this.timer.unref()
  }

  /** Writes what is queued and a last note (after a clean stop, nothing is lost to the checkpoint interval). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    const at = this.o.clock.now()
    this.enqueue(() => this.o.store.usage.noteAlive(at))
    await this.flush()
  }

  /** Resolves once every event so far is in the ledger. */
  async flush(): Promise<void> {
    await this.queue
  }

  /**
   * Starts billing `subjects` (all of one meter key) at `at`, unless that key is billed already. The
   * subjects may be computed inside the queue (they may need a store read).
   */
  begin(subjects: UsageSubject[] | (() => Promise<UsageSubject[]>), at = this.o.clock.now()): Promise<void> {
    return this.enqueue(async () => this.opened(typeof subjects === 'function' ? await subjects() : subjects, at))
  }

  /** Stops billing everything under `key` at `at`. */
  end(key: string, at = this.o.clock.now()): Promise<void> {
    return this.enqueue(() => this.closed(key, at))
  }

  /** Bills `subjects` from `at` on instead of what their key billed so far (a volume grew). */
  change(subjects: UsageSubject[], at = this.o.clock.now()): Promise<void> {
    return this.enqueue(async () => {
      const key = meterKey(subjects[0])
      const current = this.open.get(key)
      if (current && sameUsage(current, subjects)) return
      await this.closed(key, at)
      await this.opened(subjects, at)
    })
  }

  workerBillable(w: { id: string; endpointId: string; accountId: string; allocation: Allocation | null }): void {
    const { allocation } = w
    if (!allocation) return
    void this.begin(async () => {
      const ep = (await this.o.store.endpoints.get(w.endpointId)) as EndpointRecord | undefined
      return workerUsage(this.o.prices, { ...w, allocation }, ep?.disk ?? 0)
    })
  }

  workerUnbillable(w: { id: string; endpointId: string }): void {
    void this.end(meterKey({ product: 'serverless', resourceId: w.endpointId, partId: w.id }))
  }

  /**
   * A pod changed status: compute is billed while it is RUNNING, its disks while it exists (from its
   * creation to TERMINATED). Each transition also reprices the disks, so a resize shows from the next one.
   */
  podTransition(t: PodTransition): void {
    const at = Date.parse(t.at)
    const { compute, disk } = podUsage(this.o.prices, t.pod)
    const key = (slot: 'compute' | 'disk') =>
      meterKey(
        t.pod.cluster
          ? { product: 'cluster', resourceId: t.pod.cluster.id, partId: `${t.pod.id}:${slot}` }
          : { product: 'pod', resourceId: t.pod.id, partId: slot },
      )
    if (compute.length) void this.begin(compute, at)
    else void this.end(key('compute'), at)
    if (disk.length) void this.change(disk, at)
    else void this.end(key('disk'), at)
  }

  async volumeChanged(v: {
    id: string
    accountId: string
    size: number
    type: 'STANDARD' | 'HIGH_PERFORMANCE'
  }): Promise<void> {
    await this.change(volumeUsage(this.o.prices, v))
  }

  async volumeDeleted(volumeId: string): Promise<void> {
    await this.end(meterKey({ product: 'volume', resourceId: volumeId, partId: null }))
  }

  private async opened(subjects: UsageSubject[], at: number): Promise<void> {
    if (subjects.length === 0) return
    const key = meterKey(subjects[0])
    if (this.open.has(key)) return
    this.open.set(key, await Promise.all(subjects.map((s) => this.o.store.usage.open(s, at))))
  }

  private async closed(key: string, at: number): Promise<void> {
    const intervals = this.open.get(key)
    if (!intervals) return
    this.open.delete(key)
    await this.o.store.usage.close(
      intervals.map((i) => i.id),
      at,
    )
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    const run = this.queue
      .then(op)
      .catch((err: Error) => this.o.log.error({ err: err.message }, 'usage ledger write failed'))
    this.queue = run
    return run
  }
}

/** True when open intervals bill exactly these subjects (same components, quantities and prices). */
function sameUsage(intervals: UsageInterval[], subjects: UsageSubject[]): boolean {
  const sig = (s: UsageSubject) =>
    `${s.component}|${s.quantity}|${s.priceMicros}|${s.periodMs}|${s.gpuTypeId ?? ''}|${s.accountId}`
  const a = intervals.map(sig).sort()
  const b = subjects.map(sig).sort()
  return a.length === b.length && a.every((x, i) => x === b[i])
}
