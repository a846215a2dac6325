import { DomainError } from '../../domain/errors.js'
import { pickWorker, type LbDemand, type LbHealth } from '../../domain/workers/planLbScaling.js'
import type { HttpAddress } from '../workers/types.js'
import type { WorkerService } from '../workers/WorkerService.js'

export interface LoadBalancerDeps {
  workers: Pick<WorkerService, 'httpWorkers' | 'requestStarted' | 'requestEnded'>
  /** The last health check of a worker (only READY workers get requests). */
  health: (workerId: string) => LbHealth | undefined
  /** How long a request waits for a worker before a 503. */
  coldStartTimeoutMs: number
  /** Monotonic ms. */
  monotonic?: () => number
}

/** A request's hold on one worker; `release` exactly once when the request (or WebSocket) ends. */
export interface Lease {
  workerId: string
  address: HttpAddress
  release(): void
}

interface Waiter {
  endpointId: string
  capacity: number
  since: number
  grant(lease: Lease): void
  fail(err: Error): void
}

/**
 * Chooses the worker of each request to a load-balancing endpoint: the ready, healthy, non-draining worker
 * with the fewest requests in flight, each carrying at most `capacity` (the endpoint's requestCount). When
 * none can take it, the request waits in line (first come, first served) until one can, a cold-started
 * worker included, or until the cold-start limit (503 with Retry-After). Its waiting and in-flight counts are
 * the demand the scaler acts on.
 */
export class LoadBalancer {
  private readonly queues = new Map<string, Waiter[]>()
  private readonly inFlight = new Map<string, number>()
  private readonly mono: () => number
  private readonly waitingListeners = new Set<(endpointId: string) => void>()
  private seq = 0

  constructor(private readonly deps: LoadBalancerDeps) {
    this.mono = deps.monotonic ?? (() => performance.now())
  }

  /**
   * Calls `listener` each time a request starts waiting in line (the scaler looks at the endpoint at once:
   * a cold start). Returns the unsubscribe.
   */
  onWaiting(listener: (endpointId: string) => void): () => void {
    this.waitingListeners.add(listener)
    return () => this.waitingListeners.delete(listener)
  }

  /**
   * A worker for one request to `endpointId`, at once or after waiting in line. Rejects with a 503
   * problem after the cold-start limit, or with `signal`'s reason when the client goes away first.
   */
  acquire(endpointId: string, capacity: number, signal?: AbortSignal): Promise<Lease> {
    const lease = this.tryAcquire(endpointId, capacity)
    return lease ? Promise.resolve(lease) : this.wait(endpointId, capacity, signal)
  }

  /** A worker at once, or null when the request would have to wait (others wait already, or none can take it). */
  tryAcquire(endpointId: string, capacity: number): Lease | null {
    return this.queues.get(endpointId)?.length ? null : this.tryLease(endpointId, capacity)
  }

  /** Waits in line for a worker (see acquire). */
  wait(endpointId: string, capacity: number, signal?: AbortSignal): Promise<Lease> {
    return new Promise<Lease>((resolve, reject) => {
      const timeoutMs = this.deps.coldStartTimeoutMs
      const timer = setTimeout(() => {
        remove()
        const retry = Math.max(1, Math.ceil(timeoutMs / 4000))
        reject(
          new DomainError(
            'unavailable',
            `no worker of endpoint ${endpointId} became ready to take the request within ${timeoutMs} ms (cold start or all workers busy); retry shortly`,
            undefined,
            { 'retry-after': String(retry) },
          ),
        )
      }, timeoutMs)
      const onAbort = () => {
        remove()
        reject(signal?.reason ?? new Error('the client went away'))
      }
      const waiter: Waiter = {
        endpointId,
        capacity,
        since: this.mono(),
        grant: (lease) => {
          clearTimeout(timer)
          signal?.removeEventListener('abort', onAbort)
          resolve(lease)
        },
        fail: (err) => {
          clearTimeout(timer)
          signal?.removeEventListener('abort', onAbort)
          reject(err)
        },
      }
      const remove = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        const q = this.queues.get(endpointId)
        const i = q?.indexOf(waiter) ?? -1
        if (q && i >= 0) q.splice(i, 1)
        if (q?.length === 0) this.queues.delete(endpointId)
      }
      if (signal?.aborted) return onAbort()
      signal?.addEventListener('abort', onAbort, { once: true })
      const q = this.queues.get(endpointId) ?? []
      q.push(waiter)
      this.queues.set(endpointId, q)
      for (const listener of this.waitingListeners) listener(endpointId)
    })
  }

  /** Hands waiting requests of an endpoint (or of all) to workers that can take them now, oldest first. */
  dispatch(endpointId?: string): void {
    const ids = endpointId === undefined ? [...this.queues.keys()] : [endpointId]
    for (const id of ids) {
      const q = this.queues.get(id)
      while (q?.length) {
        const lease = this.tryLease(id, q[0].capacity)
        if (!lease) break
        q.shift()!.grant(lease)
      }
      if (q?.length === 0) this.queues.delete(id)
    }
  }

  /** Waiting and in-flight requests of an endpoint (the scaler's demand). */
  demand(endpointId: string): LbDemand {
    const q = this.queues.get(endpointId)
    return {
      waiting: q?.length ?? 0,
      inFlight: this.inFlight.get(endpointId) ?? 0,
      oldestWaitMs: q?.length ? this.mono() - q[0].since : 0,
    }
  }

  /** Endpoints with requests waiting or in flight. */
  busyEndpoints(): string[] {
    return [...new Set([...this.queues.keys(), ...this.inFlight.keys()])]
  }

  /** Fails every waiting request (shutdown). */
  close(): void {
    for (const q of this.queues.values())
      for (const w of q.splice(0))
        w.fail(new DomainError('unavailable', 'the control plane is stopping', undefined, { 'retry-after': '1' }))
    this.queues.clear()
  }

  private tryLease(endpointId: string, capacity: number): Lease | null {
    const { workers, health } = this.deps
    const ready = workers
      .httpWorkers(endpointId)
      .filter((w) => w.phase === 'ready' && !w.retiring && health(w.id) === 'READY')
    const id = pickWorker(ready, capacity)
    if (id === null) return null
    const worker = ready.find((w) => w.id === id)!
    const requestId = `r${++this.seq}`
    workers.requestStarted(id, requestId)
    this.inFlight.set(endpointId, (this.inFlight.get(endpointId) ?? 0) + 1)
    let released = false
    return {
      workerId: id,
      address: worker.address,
      release: () => {
        if (released) return
        released = true
        const n = (this.inFlight.get(endpointId) ?? 1) - 1
        if (n > 0) this.inFlight.set(endpointId, n)
        else this.inFlight.delete(endpointId)
        workers.requestEnded(id, requestId)
        // A slot is free: the next request in line may take it.
        this.dispatch(endpointId)
      },
    }
  }
}
