/** A live worker as the scaler sees it. */
export interface WorkerSnapshot {
  id: string
  state: 'starting' | 'idle' | 'running' | 'stopping'
  /** How long it has had no job (0 while running). */
  idleForMs: number
}

/** One endpoint's demand and workers at the moment of the decision. */
export interface EndpointScaling {
  endpointId: string
  /** False once the endpoint is gone (deleted, or no longer a queue endpoint): all its workers stop. */
  exists: boolean
  min: number
  max: number
  idleTimeoutMs: number
  /** Waiting jobs that may trigger scaling (normal priority). */
  queued: number
  /** Waiting lowPriority jobs: served by existing workers, never a reason to start one. */
  queuedLow: number
  workers: WorkerSnapshot[]
  /** >0 while starts are held back because its workers keep failing. */
  backoffMs: number
}

export type ScaleAction = { type: 'start'; endpointId: string; count: number } | { type: 'stop'; endpointId: string; workerId: string; reason: string }

/**
 * The simple scaling policy, pure so it can be tested with tables (the full autoscaler replaces it):
 * keep `min` workers; while normal-priority jobs wait, add workers up to `max` (one per waiting job,
 * counting workers already starting); stop workers idle for `idleTimeoutMs` down to `min`, and idle ones
 * above `max` at once. Starts are held back during a crash backoff.
 */
export function planScaling(endpoints: EndpointScaling[]): ScaleAction[] {
  const actions: ScaleAction[] = []
  for (const e of endpoints) {
    const active = e.workers.filter((w) => w.state !== 'stopping')
    if (!e.exists) {
      for (const w of active) actions.push({ type: 'stop', endpointId: e.endpointId, workerId: w.id, reason: 'the endpoint is gone' })
      continue
    }
    const running = active.filter((w) => w.state === 'running').length
    const target = Math.min(e.max, Math.max(e.min, running + e.queued))
    const toStart = target - active.length
    if (toStart > 0 && e.backoffMs <= 0) actions.push({ type: 'start', endpointId: e.endpointId, count: toStart })
    const waiting = e.queued + e.queuedLow
    // Longest idle first; never below min; above max, idle workers go without waiting for the timeout.
    const idle = active.filter((w) => w.state === 'idle').sort((a, b) => b.idleForMs - a.idleForMs)
    let remaining = active.length
    for (const w of idle) {
      if (remaining <= e.min) break
      const overMax = remaining > e.max
      // While jobs wait, an idle worker is about to take one: keep it.
      if (!overMax && (waiting > 0 || w.idleForMs < e.idleTimeoutMs)) continue
      actions.push({ type: 'stop', endpointId: e.endpointId, workerId: w.id, reason: overMax ? `more than workers.max (${e.max})` : `idle for ${Math.round(w.idleForMs)} ms` })
      remaining--
    }
  }
  return actions
}
