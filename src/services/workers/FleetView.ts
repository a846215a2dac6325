import { createHash, timingSafeEqual } from 'node:crypto'
import type { ChangeFeed } from '../../replicas/ChangeFeed.js'
import type { Store } from '../../store/Store.js'
import type { WorkerRecord } from '../../store/WorkerStore.js'
import type { WorkerPhase } from '../../domain/workers/workerState.js'
import { newLiveWorker, type LiveWorker } from './LiveWorker.js'

/** A worker as the leader last described it (see `describe`). */
interface RemoteWorker {
  id: string
  endpointId: string
  accountId: string
  phase: WorkerPhase | 'gone'
  retiring: boolean
  inFlight: number
  version: number | null
  /** Monotonic ms it was heard of. */
  at: number
}

/** A description is trusted this long without news; the leader repeats every live worker each second. */
const REMOTE_TTL_MS = 5_000
/** How long a stored record (its key hash, endpoint, state) is used before it is read again. */
const RECORD_TTL_MS = 2_000
/** Signs of life are sent to the leader at most this often per worker. */
const CONTACT_EVERY_MS = 250

/** The change-feed line describing a live worker (`gone` when it ended): `id endpointId accountId phase retiring inFlight version`. */
export function describe(w: LiveWorker, gone = false): string {
  return [
    w.id,
    w.endpointId,
    w.accountId,
    gone ? 'gone' : w.phase,
    w.retiring ? 1 : 0,
    w.jobs.size,
    w.record?.version ?? '-',
  ].join(' ')
}

/**
 * What a follower (a control-plane process that is not the leader) knows of the fleet's workers, so it can
 * serve their protocol calls: their keys and endpoints from the store, their phases from the leader's
 * broadcasts (`worker.state`). What a worker does here (signs of life, jobs taken, asking to be replaced) is
 * sent to the leader, which owns the worker's live state and acts on it. Jobs are taken straight from the
 * store (atomic), so a follower hands out jobs even while no leader runs (during a takeover).
 */
export class FleetView {
  private readonly remote = new Map<string, RemoteWorker>()
  private readonly records = new Map<string, { record: WorkerRecord | undefined; at: number }>()
  private readonly lastSent = new Map<string, number>()

  constructor(private readonly o: { store: Store; feed: ChangeFeed; mono: () => number }) {
    o.feed.on('worker.state', (line) => this.heard(line))
  }

  /** True when `token` is the key of worker `workerId` of `endpointId`, and the worker is neither stopped nor gone. */
  async authenticate(endpointId: string, workerId: string, token: string): Promise<boolean> {
    const r = await this.record(workerId)
    if (!r || r.endpointId !== endpointId) return false
    const phase = this.phase(workerId)
    if (phase === 'gone' || phase === 'unhealthy' || phase === 'throttled') return false
    if (phase === undefined && r.state !== 'STARTING' && r.state !== 'READY') return false
    return timingSafeEqual(Buffer.from(r.tokenHash, 'hex'), createHash('sha256').update(token).digest())
  }

  isDraining(workerId: string): boolean {
    const phase = this.phase(workerId)
    if (phase !== undefined) return phase === 'stopping' || phase === 'unhealthy' || phase === 'gone'
    const state = this.records.get(workerId)?.record?.state
    return state !== 'STARTING' && state !== 'READY'
  }

  isHeld(workerId: string): boolean {
    const w = this.fresh(workerId)
    return w?.phase === 'parked' || w?.retiring === true
  }

  /** A protocol call: a sign of life for the leader (at most every CONTACT_EVERY_MS per worker). */
  contact(workerId: string): void {
    const now = this.o.mono()
    if (now - (this.lastSent.get(workerId) ?? -Infinity) < CONTACT_EVERY_MS) return
    this.lastSent.set(workerId, now)
    if (this.lastSent.size > 10_000) this.lastSent.clear()
    this.o.feed.publish('worker.contact', workerId)
  }

  jobsTaken(workerId: string, jobIds: string[]): void {
    if (jobIds.length) this.o.feed.publish('worker.taken', `${workerId} ${jobIds.join(' ')}`)
  }

  /** The worker asked to be replaced (stopPod). */
  recycle(workerId: string): void {
    this.o.feed.publish('worker.recycle', workerId)
  }

  /** The leader's live workers of an endpoint as last described (for /health, the workers list and the rate limits). */
  workers(endpointId?: string): LiveWorker[] {
    const out: LiveWorker[] = []
    const now = this.o.mono()
    for (const r of this.remote.values()) {
      if (now - r.at > REMOTE_TTL_MS || r.phase === 'gone' || (endpointId !== undefined && r.endpointId !== endpointId))
        continue
      const w = newLiveWorker(r.id, r.endpointId, r.accountId, now)
      w.phase = r.phase
      w.retiring = r.retiring
      for (let i = 0; i < r.inFlight; i++) w.jobs.add(String(i))
      out.push(w)
    }
    return out
  }

  /** Forgets everything (this process becomes the leader: its own live workers are the truth). */
  clear(): void {
    this.remote.clear()
    this.records.clear()
    this.lastSent.clear()
  }

  private fresh(workerId: string): RemoteWorker | undefined {
    const r = this.remote.get(workerId)
    return r && this.o.mono() - r.at <= REMOTE_TTL_MS ? r : undefined
  }

  private phase(workerId: string): RemoteWorker['phase'] | undefined {
    return this.fresh(workerId)?.phase
  }

  private async record(workerId: string): Promise<WorkerRecord | undefined> {
    const now = this.o.mono()
    const hit = this.records.get(workerId)
    if (hit && now - hit.at < RECORD_TTL_MS) return hit.record
    const record = await this.o.store.workers.get(workerId)
    if (this.records.size > 10_000) this.records.clear()
    this.records.set(workerId, { record, at: now })
    return record
  }

  private heard(line: string): void {
    const [id, endpointId, accountId, phase, retiring, inFlight, version] = line.split(' ')
    if (!id || !phase) return
    this.remote.set(id, {
      id,
      endpointId,
      accountId,
      phase: phase as RemoteWorker['phase'],
      retiring: retiring === '1',
      inFlight: Number(inFlight) || 0,
      version: version === '-' ? null : Number(version),
      at: this.o.mono(),
    })
    // A worker that ended is read again from the store at its next call (it is refused then).
    if (phase === 'gone') this.records.delete(id)
    if (this.remote.size > 10_000)
      for (const [k, r] of this.remote) if (this.o.mono() - r.at > REMOTE_TTL_MS) this.remote.delete(k)
  }
}
