import type { WorkerStatus } from '../../contract/worker.js'

/**
 * Where a serverless worker is in its life. `throttled`: wanted, but no capacity fits (no process, nothing
 * held); `starting`: process started, not yet called in; `ready`: called in, idle or running jobs;
 * `parked`: FlashBoot keeps the process and its capacity, it takes no job; `stopping`: asked to end (or
 * given up on); `unhealthy`: it failed and waits out the crash back-off before a replacement (no process,
 * nothing held). A worker leaves the table when its slot is dropped (stopped, replaced, forgotten).
 */
export type WorkerPhase = 'throttled' | 'starting' | 'ready' | 'parked' | 'stopping' | 'unhealthy'

/** Everything that moves a worker between phases. */
export type WorkerEvent =
  /** capacity was found: its process is being started */
  | 'launch'
  /** a worker of the previous run was found still running and taken back */
  | 'adopt'
  /** its first protocol call (or passing health check) */
  | 'callIn'
  /** FlashBoot: scaled down but kept warm */
  | 'park'
  /** a parked worker is wanted again (a scale-up, or its held take got a job) */
  | 'unpark'
  /** stopped on purpose: idle, scaled down, retired, shutdown */
  | 'stop'
  /** given up on: no heartbeat, never called in, failed health checks, its host is down */
  | 'lose'
  /** its process failed (or failed to start) without being asked to stop */
  | 'crash'

const TRANSITIONS: Record<WorkerEvent, { from: readonly WorkerPhase[]; to: WorkerPhase }> = {
  launch: { from: ['throttled'], to: 'starting' },
  adopt: { from: ['throttled'], to: 'starting' },
  callIn: { from: ['starting'], to: 'ready' },
  park: { from: ['ready'], to: 'parked' },
  unpark: { from: ['parked'], to: 'ready' },
  stop: { from: ['starting', 'ready', 'parked'], to: 'stopping' },
  lose: { from: ['starting', 'ready', 'parked'], to: 'stopping' },
  crash: { from: ['starting', 'ready', 'stopping'], to: 'unhealthy' },
}

/** The phase `event` moves a worker in `from` to, or null when the event does not apply there. */
export function nextPhase(from: WorkerPhase, event: WorkerEvent): WorkerPhase | null {
  const t = TRANSITIONS[event]
  return t.from.includes(from) ? t.to : null
}

/**
 * The `state` a worker record stores, for what outlives the process (restart recovery, the workers list of a
 * follower, history): STARTING, READY and STOPPING while it lives, EXITED or FAILED once it has ended.
 */
export type StoredWorkerState = 'STARTING' | 'READY' | 'STOPPING' | 'EXITED' | 'FAILED'

/** How a worker's life ended: stopped (or removed by a control-plane restart), or failed (crashed, or could not start). */
export type WorkerEnd = 'exited' | 'failed'

const STORED: Record<WorkerPhase | WorkerEnd, StoredWorkerState> = {
  // Not recorded (nothing was started); were it, it is waiting to start.
  throttled: 'STARTING',
  starting: 'STARTING',
  ready: 'READY',
  // FlashBoot keeps the process: to what outlives it, a parked worker is a live one.
  parked: 'READY',
  stopping: 'STOPPING',
  unhealthy: 'FAILED',
  exited: 'EXITED',
  failed: 'FAILED',
}

/** The stored state of a worker in a phase, or ended one way or the other: the only source of WorkerRecord.state. */
export function storedStateOf(phaseOrEnd: WorkerPhase | WorkerEnd): StoredWorkerState {
  return STORED[phaseOrEnd]
}

/** A worker's phase with `ready` split by whether it runs anything: what the scaler plans with. */
export type WorkerActivity = Exclude<WorkerPhase, 'ready'> | 'idle' | 'running'

export function activityOf(phase: WorkerPhase, inFlight: number): WorkerActivity {
  if (phase !== 'ready') return phase
  return inFlight > 0 ? 'running' : 'idle'
}

const API_STATUS: Record<WorkerActivity, WorkerStatus | null> = {
  throttled: 'THROTTLED',
  starting: 'INITIALIZING',
  idle: 'IDLE',
  running: 'RUNNING',
  parked: 'PARKED',
  unhealthy: 'UNHEALTHY',
  stopping: null,
}

/** The status the API lists a worker with; null for one on its way out (not listed). */
export function apiStatusOf(phase: WorkerPhase, inFlight: number): WorkerStatus | null {
  return API_STATUS[activityOf(phase, inFlight)]
}
