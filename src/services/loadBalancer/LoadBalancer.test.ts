import { describe, expect, it } from 'vitest'
import { DomainError } from '../../domain/errors.js'
import { LoadBalancer } from './LoadBalancer.js'
import type { HttpWorker } from '../workers/types.js'

/** Workers as the WorkerService would list them, with in-flight counts kept the way it keeps them. */
function fleet(ids: string[]) {
  const workers = new Map<string, HttpWorker>(
    ids.map((id) => [
      id,
      {
        id,
        endpointId: 'e',
        phase: 'ready',
        retiring: false,
        inFlight: 0,
        address: { host: '127.0.0.1', port: 1, healthPort: 1, healthPath: '/ping' },
      },
    ]),
  )
  return {
    workers,
    port: {
      httpWorkers: (endpointId?: string) =>
        [...workers.values()]
          .filter((w) => endpointId === undefined || w.endpointId === endpointId)
          .map((w) => ({ ...w })),
      requestStarted: (id: string) => void (workers.get(id)!.inFlight += 1),
      requestEnded: (id: string) => void (workers.get(id)!.inFlight -= 1),
    },
  }
}

describe('LoadBalancer', () => {
  it('serves waiting requests in arrival order as capacity frees up', async () => {
    const f = fleet(['a'])
    const waited: string[] = []
    const lb = new LoadBalancer({ workers: f.port, health: () => 'READY', coldStartTimeoutMs: 5_000 })
    lb.onWaiting((id) => waited.push(id))
    const first = await lb.acquire('e', 1)
    const order: number[] = []
    const later = [1, 2, 3].map((n) => lb.acquire('e', 1).then((lease) => (order.push(n), lease)))
    expect(lb.demand('e')).toMatchObject({ waiting: 3, inFlight: 1 })
    expect(waited).toEqual(['e', 'e', 'e'])
    first.release()
    const second = await later[0]
    second.release()
    ;(await later[1]).release()
    ;(await later[2]).release()
    expect(order).toEqual([1, 2, 3])
    expect(lb.demand('e')).toMatchObject({ waiting: 0, inFlight: 0 })
  })

  it('sends each request to the least busy healthy worker, never to one that is not READY or is draining', async () => {
    const f = fleet(['a', 'b', 'c'])
    f.workers.get('c')!.retiring = true
    const lb = new LoadBalancer({
      workers: f.port,
      health: (id) => (id === 'b' ? 'INITIALIZING' : 'READY'),
      coldStartTimeoutMs: 5_000,
    })
    const leases = [await lb.acquire('e', 4), await lb.acquire('e', 4)]
    expect(leases.map((l) => l.workerId)).toEqual(['a', 'a'])
  })

  it('answers 503 with Retry-After when no worker becomes ready in time, and forgets a request whose client left', async () => {
    const f = fleet([])
    const lb = new LoadBalancer({ workers: f.port, health: () => 'READY', coldStartTimeoutMs: 50 })
    const err = await lb.acquire('e', 1).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(DomainError)
    expect((err as DomainError).kind).toBe('unavailable')
    expect(Number((err as DomainError).headers?.['retry-after'])).toBeGreaterThan(0)
    const gone = new AbortController()
    const pending = lb.acquire('e', 1, gone.signal).catch(() => 'left')
    gone.abort()
    expect(await pending).toBe('left')
    expect(lb.demand('e').waiting).toBe(0)
  })
})
