import type { Flashboot } from '../../contract/endpoint.js'
import { burstJump, peakDesired } from './scalingHistory.js'
import type { WorkerActivity } from './workerState.js'

/**
 * A worker as the scaler sees it. `throttled`: wanted but not placed (no capacity), holds nothing;
 * `unhealthy`: it crashed and waits out the crash back-off, holds nothing; `parked`: FlashBoot keeps the
 * process (and its capacity) but it takes no job and is not counted; `stopping`: on its way out.
 */
export type WorkerState = WorkerActivity

export interface WorkerSnapshot {
  id: string
  state: WorkerState
  /** idle: since its last job; parked: since it was parked; unhealthy: since it failed; throttled: since wanted. */
  idleForMs: number
  /** Jobs it runs now. */
  inFlight: number
  /** Runs an older release than the endpoint's current version. */
  stale: boolean
  /** Asked to stop once its running jobs end (stale, or it asked for stopPod). */
  retiring: boolean
}

export type ScalingPolicy =
  | { type: 'QUEUE_DELAY'; queueDelayMs: number }
  | { type: 'REQUEST_COUNT'; requestCount: number }

/** A change point of an endpoint's demand, `agoMs` before the decision; values hold until the next sample. */
export interface DemandSample {
  agoMs: number
  /** Waiting normal-priority jobs. */
  queued: number
  /** Workers the policy wanted then. */
  desired: number
}

/** One endpoint's demand and workers at the moment of the decision. */
export interface EndpointScaling {
  endpointId: string
  /** False once the endpoint is gone (deleted, or no longer a queue endpoint): all its workers stop. */
  exists: boolean
  policy: ScalingPolicy
  min: number
  max: number
  /** How long a worker must be idle before it is removed; also the scale-down hysteresis window. */
  idleTimeoutMs: number
  flashboot: Flashboot
  /** How long a parked worker is kept (from the FlashBoot mode); 0 (OFF) stops idle workers instead of parking them. */
  parkWindowMs: number
  /** Waiting jobs that may trigger scaling (normal priority). */
  queued: number
  /** Waiting lowPriority jobs: served by existing workers, never a reason to start one. */
  queuedLow: number
  /** Running jobs (any priority). */
  inProgress: number
  /** How long the oldest waiting normal-priority job has waited (0 when none). */
  oldestWaitMs: number
  workers: WorkerSnapshot[]
  /** >0 while starts are held back because its workers keep failing. */
  backoffMs: number
  /** Recent decisions, newest last. */
  history: DemandSample[]
}

export type ScaleAction =
  | { type: 'start'; endpointId: string; count: number }
  | { type: 'unpark'; endpointId: string; workerId: string }
  | { type: 'place'; endpointId: string; workerId: string }
  | { type: 'replace'; endpointId: string; workerId: string }
  | { type: 'park'; endpointId: string; workerId: string; reason: string }
  | { type: 'retire'; endpointId: string; workerId: string; reason: string }
  | { type: 'stop'; endpointId: string; workerId: string; reason: string }

/** What the policy decided for one endpoint, with the numbers behind it (logged by the scaler). */
export interface ScalingDecision {
  endpointId: string
  /** Counted workers before the decision. */
  current: number
  /** The worker count the policy wants now, within min..max. */
  desired: number
  /** The count scale-down keeps: the highest `desired` over the idle-timeout window (hysteresis). */
  keep: number
  /** The burst path fired: demand jumped, so workers are added now instead of after queueDelay. */
  burst: boolean
  actions: ScaleAction[]
}

/** Workers that serve or will serve jobs soon, and count toward min/max. */
const COUNTED = new Set<WorkerState>(['throttled', 'starting', 'idle', 'running', 'unhealthy'])

/** True for a worker counted toward workers.min/max and the policy's current count. */
export const isCounted = (w: WorkerSnapshot): boolean => COUNTED.has(w.state) && !w.stale && !w.retiring

/**
 * The scaling policy of all queue endpoints, pure so it is tested with tables.
 *
 * Desired workers: REQUEST_COUNT wants ceil((queued + in progress) / requestCount). QUEUE_DELAY keeps
 * what it has while jobs wait less than queueDelay, and once the oldest waited longer adds one worker
 * per waiting job that no idle or starting worker is about to take; an endpoint with no worker at all
 * starts one at once (a cold start should not also wait queueDelay). The burst path: when waiting jobs
 * jumped by at least max(4, current workers) within 2 s, workers are added on this tick without waiting
 * for queueDelay. lowPriority jobs never add workers. The result is clamped to workers.min..max, where
 * workers retiring (rollout, lowered max) still count: no worker starts while they hold the max.
 *
 * Scale-down (hysteresis): a worker is removed only once it has been idle for idleTimeout AND the
 * highest desired count over the last idleTimeout is below the current count. Up and down use different
 * thresholds (REQUEST_COUNT: up as soon as load > n x requestCount, down only when load stayed at most
 * (n-1) x requestCount for the whole window), so demand hovering at a boundary does not flap. Removed
 * workers are parked (FlashBoot) or stopped (OFF); a scale-up reuses parked workers before starting new.
 *
 * Crash back-off holds starts, placements and replacements (never unparking healthy workers). Workers of
 * an older release are rolled over: idle ones stop at once and are replaced, busy ones finish their jobs
 * first (retire).
 */
export function planScaling(e: EndpointScaling): ScalingDecision {
  const actions: ScaleAction[] = []
  const id = e.endpointId
  const stop = (w: WorkerSnapshot, reason: string) =>
    actions.push({ type: 'stop', endpointId: id, workerId: w.id, reason })
  const live = e.workers.filter((w) => w.state !== 'stopping')
  if (!e.exists) {
    for (const w of live) stop(w, 'the endpoint is gone')
    return { endpointId: id, current: 0, desired: 0, keep: 0, burst: false, actions }
  }

  // Rollover and parked housekeeping first: what is stopped here is not counted below.
  for (const w of live) {
    if (w.state === 'parked') {
      if (w.stale) stop(w, 'parked on an older release')
      else if (e.parkWindowMs <= 0) stop(w, 'FlashBoot is off')
      else if (w.idleForMs >= e.parkWindowMs)
        stop(w, `parked for ${Math.round(w.idleForMs)} ms (FlashBoot window ${e.parkWindowMs} ms)`)
    } else if (w.stale && !w.retiring) {
      if (w.state === 'running')
        actions.push({
          type: 'retire',
          endpointId: id,
          workerId: w.id,
          reason: 'runs an older release: replaced once its jobs end',
        })
      else stop(w, 'runs an older release')
    }
  }

  const counted = live.filter(isCounted)
  const retiring = live.filter((w) => w.retiring || (w.stale && w.state === 'running')).length
  const n = (s: WorkerState) => counted.filter((w) => w.state === s).length
  const idle = n('idle')
  const busy = n('running')
  const soon = n('starting') + n('throttled') + n('unhealthy')
  const current = counted.length
  const burst = e.queued > 0 && burstJump(e.history, e.queued) >= Math.max(BURST_MIN_JOBS, current)

  let want: number
  if (e.policy.type === 'REQUEST_COUNT') {
    want = Math.ceil((e.queued + e.inProgress) / e.policy.requestCount)
  } else if (e.queued === 0) {
    want = busy
  } else if (burst || e.oldestWaitMs >= e.policy.queueDelayMs) {
    want = current + Math.max(0, e.queued - idle - soon)
  } else {
    want = Math.max(current, 1)
  }
  const ceiling = Math.max(0, e.max - retiring)
  const desired = Math.min(ceiling, Math.max(e.min, want))
  // Idle workers about to take waiting jobs (lowPriority ones too) are never removed.
  const keep = Math.min(
    ceiling,
    Math.max(desired, peakDesired(e.history, e.idleTimeoutMs), busy + Math.min(idle, e.queued + e.queuedLow)),
  )

  const parked = live
    .filter((w) => w.state === 'parked' && !w.stale && e.parkWindowMs > 0 && w.idleForMs < e.parkWindowMs)
    .sort((a, b) => a.idleForMs - b.idleForMs)
  const unpark = (count: number) => {
    const reused = parked.splice(0, Math.max(0, count))
    for (const w of reused) actions.push({ type: 'unpark', endpointId: id, workerId: w.id })
    return reused.length
  }

  if (desired > current) {
    const fresh = desired - current - unpark(desired - current)
    if (fresh > 0 && e.backoffMs <= 0) actions.push({ type: 'start', endpointId: id, count: fresh })
  }
  // Above workers.max (lowered by a PATCH) workers go at once. Retiring ones are on their way out: they
  // hold back new starts (ceiling) but are no reason to retire more.
  const overMax = current > e.max
  let excess = current - (overMax ? e.max : keep)
  // Throttled slots hold nothing: they follow demand without hysteresis.
  let unwanted = current - (overMax ? e.max : desired)
  const remove = (w: WorkerSnapshot, reason: string) => {
    excess--
    if (w.state === 'idle' && e.parkWindowMs > 0 && !overMax)
      actions.push({ type: 'park', endpointId: id, workerId: w.id, reason })
    else if (w.state === 'running') actions.push({ type: 'retire', endpointId: id, workerId: w.id, reason })
    else stop(w, reason)
  }
  const byIdle = (s: WorkerState) => counted.filter((w) => w.state === s).sort((a, b) => b.idleForMs - a.idleForMs)
  // A throttled slot still wanted retries placement (or gives its place to a parked worker); an unhealthy
  // one is replaced once the back-off is over.
  for (const w of byIdle('throttled')) {
    if (unwanted-- > 0) remove(w, 'no longer needed')
    else if (unpark(1) === 1) stop(w, 'a parked worker took its place')
    else if (e.backoffMs <= 0) actions.push({ type: 'place', endpointId: id, workerId: w.id })
  }
  for (const w of byIdle('unhealthy')) {
    if (excess > 0 && (overMax || w.idleForMs >= e.idleTimeoutMs)) remove(w, 'no longer needed')
    else if (excess <= 0 && e.backoffMs <= 0) actions.push({ type: 'replace', endpointId: id, workerId: w.id })
  }
  for (const w of byIdle('idle')) {
    if (excess <= 0) break
    if (overMax) remove(w, `more than workers.max (${e.max})`)
    else if (w.idleForMs >= e.idleTimeoutMs) remove(w, `idle for ${Math.round(w.idleForMs)} ms`)
  }
  if (overMax) {
    for (const s of ['starting', 'running'] as const)
      for (const w of byIdle(s)) if (excess > 0) remove(w, `more than workers.max (${e.max})`)
  }
  return { endpointId: id, current, desired, keep, burst, actions }
}

/** Waiting jobs must jump by at least this many (or the current worker count, if higher) to be a burst. */
export const BURST_MIN_JOBS = 4

/**
 * The parked workers to take back at once for a job just queued (counted in `e.queued`) on an endpoint none of
 * whose workers is counted (FlashBoot's scale from zero): those planScaling unparks, in its order; none where
 * another worker is counted (it takes the job, or the next decision weighs the queue). Applied as the job is
 * queued, so that the parked worker's held job-take gets the job without waiting for that decision.
 */
export function unparkForJob(e: EndpointScaling): string[] {
  if (e.workers.some(isCounted)) return []
  return planScaling(e).actions.flatMap((a) => (a.type === 'unpark' ? [a.workerId] : []))
}

/** How long a FlashBoot mode keeps a scaled-down worker parked (0: OFF stops it). */
export function parkWindowMs(
  mode: Flashboot,
  windows: { flashbootWindowMs: number; priorityFlashbootWindowMs: number },
): number {
  return mode === 'PRIORITY_FLASHBOOT'
    ? windows.priorityFlashbootWindowMs
    : mode === 'FLASHBOOT'
      ? windows.flashbootWindowMs
      : 0
}
