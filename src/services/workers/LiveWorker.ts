import type { Allocation } from '../../catalog/Fleet.js'
import type { WorkerSnapshot } from '../../domain/workers/planScaling.js'
import { activityOf, type WorkerPhase } from '../../domain/workers/workerState.js'
import type { StartPhase, Workload, WorkloadExit } from '../../runtime/RuntimeDriver.js'
import type { WorkerRecord } from '../../store/WorkerStore.js'

/** A worker as the WorkerService keeps it in memory. Times are monotonic ms. */
export interface LiveWorker {
  id: string
  endpointId: string
  accountId: string
  /** Moved only through WorkerLifecycle's `move` (the table in domain/workers/workerState.ts). */
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
  /** While starting: why the runtime cannot place it yet (`NO_CAPACITY: ...`, a cluster's scheduler), else null. */
  waitingFor: string | null
  /** While the runtime starts it: cancels that start (stopped before it ran). */
  abortStart: (() => void) | null
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
    waitingFor: null,
    abortStart: null,
    timeline: null,
    abandon: null,
  }
}

/** The scaler's view of a worker at `now`; `version` is the endpoint's current release. */
export function snapshotOf(w: LiveWorker, now: number, version: number | null): WorkerSnapshot {
  const state = activityOf(w.phase, w.jobs.size)
  // idle: since its last job; throttled, parked, unhealthy: since the phase began; busy or in passage: 0.
  const idleForMs =
    state === 'idle'
      ? now - w.idleSince
      : state === 'running' || state === 'starting' || state === 'stopping'
        ? 0
        : now - w.phaseSince
  return {
    id: w.id,
    state,
    idleForMs,
    inFlight: w.jobs.size,
    stale: version !== null && w.record !== null && w.record.version !== version,
    retiring: w.retiring,
  }
}
