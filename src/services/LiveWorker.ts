import type { Allocation } from '../catalog/Fleet.js'
import type { WorkerSnapshot } from '../domain/planScaling.js'
import type { StartPhase, Workload, WorkloadExit } from '../runtime/RuntimeDriver.js'
import type { WorkerRecord } from '../store/WorkerStore.js'

/**
 * Where a worker is in its life. `throttled`: wanted, but no capacity fits (no process, nothing held);
 * `starting`: process started, not yet called in; `ready`: called in, idle or running jobs; `parked`:
 * FlashBoot keeps the process and its capacity, it takes no job; `stopping`: asked to end (or given up
 * on); `unhealthy`: it failed and waits out the crash back-off before a replacement (no process, nothing held).
 */
export type WorkerPhase = 'throttled' | 'starting' | 'ready' | 'parked' | 'stopping' | 'unhealthy'

/** A worker as the WorkerService keeps it in memory. Times are monotonic ms. */
export interface LiveWorker {
  id: string
  endpointId: string
  accountId: string
  phase: WorkerPhase
  /** Its stored record: null while throttled (never placed). */
  record: WorkerRecord | null
  allocation: Allocation | null
  handle: Workload | null
  jobs: Set<string>
  jobsDone: number
  lastContact: number
  startedAt: number
  idleSince: number
  /** When the current phase began (throttled, parked, unhealthy). */
  phaseSince: number
  /** Parked under PRIORITY_FLASHBOOT: evicted last. */
  parkedPriority: boolean
  /** Stop once its running jobs end (older release, or the worker posted stopPod). */
  retiring: boolean
  /** Intentional stop (idle, shutdown, stopPod, rollout): its exit is not a crash. */
  intentional: boolean
  /** Set when the platform gave up on it (no heartbeat, never called in), for the record and its jobs' error. */
  lostReason: string | null
  /** Why it cannot be placed (throttled) or how it failed (unhealthy). */
  lastError: string | null
  finished: Promise<void>
  /** While starting: the runtime's step (pull, create, start) and image bytes pulled. */
  startPhase: StartPhase | null
  pull: { bytes: number; totalBytes: number | null } | null
  /** Monotonic ms of the start's steps: launch, pull done, runtime started, first call. */
  timeline: { launch: number; pulled: number | null; started: number | null; called: number | null } | null
  /** Ends its watch without the runtime's word (its host stopped answering). */
  abandon: ((exit: WorkloadExit) => void) | null
}

/** A new worker slot of an endpoint, not yet placed. */
export function newLiveWorker(id: string, endpointId: string, accountId: string, now: number): LiveWorker {
  return {
    id,
    endpointId,
    accountId,
    phase: 'throttled',
    record: null,
    allocation: null,
    handle: null,
    jobs: new Set(),
    jobsDone: 0,
    lastContact: now,
    startedAt: now,
    idleSince: now,
    phaseSince: now,
    parkedPriority: false,
    retiring: false,
    intentional: false,
    lostReason: null,
    lastError: null,
    finished: Promise.resolve(),
    startPhase: null,
    pull: null,
    timeline: null,
    abandon: null,
  }
}

/** The scaler's view of a worker at `now`; `version` is the endpoint's current release. */
export function snapshotOf(w: LiveWorker, now: number, version: number | null): WorkerSnapshot {
  const base = { id: w.id, inFlight: w.jobs.size, stale: version !== null && w.record !== null && w.record.version !== version, retiring: w.retiring }
  switch (w.phase) {
    case 'ready':
      return w.jobs.size > 0 ? { ...base, state: 'running', idleForMs: 0 } : { ...base, state: 'idle', idleForMs: now - w.idleSince }
    case 'starting':
    case 'stopping':
      return { ...base, state: w.phase, idleForMs: 0 }
    default:
      return { ...base, state: w.phase, idleForMs: now - w.phaseSince }
  }
}
