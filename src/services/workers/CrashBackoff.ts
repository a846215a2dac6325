/** Exponential back-off: `baseMs` after the first failure, doubling per consecutive failure, capped at `maxMs`. */
export function backoffDelay(consecutive: number, baseMs: number, maxMs: number): number {
  if (consecutive <= 0) return 0
  return Math.min(maxMs, baseMs * 2 ** Math.min(30, consecutive - 1))
}

interface Failures {
  consecutive: number
  lastAt: number
  reason: string
}

/**
 * Consecutive worker failures per endpoint (a crash, a failed start, a start-up or heartbeat timeout),
 * and the back-off they impose on starting the next worker. A healthy worker (one that ended a job, or
 * stayed up a while) clears the count.
 */
export class CrashBackoff {
  private readonly failures = new Map<string, Failures>()

  constructor(private readonly o: { baseMs: number; maxMs: number; now: () => number }) {}

  /** Records a failure; returns the back-off it starts. */
  failed(endpointId: string, reason: string): number {
    const consecutive = (this.failures.get(endpointId)?.consecutive ?? 0) + 1
    this.failures.set(endpointId, { consecutive, lastAt: this.o.now(), reason })
    return backoffDelay(consecutive, this.o.baseMs, this.o.maxMs)
  }

  healthy(endpointId: string): void {
    this.failures.delete(endpointId)
  }

  /** ms before another worker of the endpoint may start (0 = go). */
  remainingMs(endpointId: string): number {
    const f = this.failures.get(endpointId)
    if (!f) return 0
    return Math.max(0, f.lastAt + backoffDelay(f.consecutive, this.o.baseMs, this.o.maxMs) - this.o.now())
  }

  consecutive(endpointId: string): number {
    return this.failures.get(endpointId)?.consecutive ?? 0
  }

  lastReason(endpointId: string): string | null {
    return this.failures.get(endpointId)?.reason ?? null
  }
}
