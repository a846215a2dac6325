import type { Clock } from '../../domain/clock.js'

/** A worker that dropped this many take answers of one endpoint within the window is reported. */
export const DROPS_TO_REPORT = 3
/** How far back dropped take answers count. */
export const DROP_WINDOW_MS = 15 * 60_000

/** What why-waiting reports of an endpoint whose workers drop the jobs they take. */
export interface DropReport {
  /** Jobs requeued within the window because the worker that took them never acknowledged them. */
  count: number
  /** The workers that dropped them, most recent first. */
  workerIds: string[]
}

/**
 * Jobs put back in the queue because the worker that took them never acknowledged them (its pings did not
 * list them), per endpoint, over a sliding window. One such requeue can be a lost answer; several mean a
 * worker that throws away what job-take hands it (an SDK that refuses the answer, a handler loop that
 * swallows jobs), and the user should see that instead of jobs that loop silently.
 */
export class DroppedTakes {
  private readonly byEndpoint = new Map<string, Array<{ at: number; workerId: string }>>()

  constructor(private readonly clock: Clock) {}

  /** Records a requeue of a job of `endpointId` that `workerId` took and never acknowledged. */
  note(endpointId: string, workerId: string): void {
    const now = this.clock.now()
    const list = this.recent(endpointId, now)
    list.push({ at: now, workerId })
    this.byEndpoint.set(endpointId, list)
  }

  /** The endpoint's dropped takes within the window, once there are enough to report; else null. */
  report(endpointId: string): DropReport | null {
    const list = this.recent(endpointId, this.clock.now())
    if (list.length === 0) this.byEndpoint.delete(endpointId)
    if (list.length < DROPS_TO_REPORT) return null
    const workerIds = [...new Set(list.map((d) => d.workerId).reverse())]
    return { count: list.length, workerIds }
  }

  private recent(endpointId: string, now: number): Array<{ at: number; workerId: string }> {
    const list = this.byEndpoint.get(endpointId) ?? []
    const from = list.findIndex((d) => now - d.at < DROP_WINDOW_MS)
    return from < 0 ? [] : from === 0 ? list : list.slice(from)
  }
}
