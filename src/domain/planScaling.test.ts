import { describe, expect, it } from 'vitest'
import { planScaling, type EndpointScaling, type WorkerSnapshot } from './planScaling.js'

const ep = (o: Partial<EndpointScaling>): EndpointScaling => ({ endpointId: 'e', exists: true, min: 0, max: 3, idleTimeoutMs: 10_000, queued: 0, queuedLow: 0, workers: [], backoffMs: 0, ...o })
const w = (id: string, state: WorkerSnapshot['state'], idleForMs = 0): WorkerSnapshot => ({ id, state, idleForMs })

describe('planScaling', () => {
  const cases: Array<[string, Partial<EndpointScaling>, unknown[]]> = [
    ['nothing to do for an idle endpoint without min', {}, []],
    ['keeps workers.min running', { min: 2 }, [{ type: 'start', endpointId: 'e', count: 2 }]],
    ['starts one worker per waiting job', { queued: 2 }, [{ type: 'start', endpointId: 'e', count: 2 }]],
    ['never above workers.max', { queued: 10 }, [{ type: 'start', endpointId: 'e', count: 3 }]],
    ['counts workers already starting', { queued: 2, workers: [w('a', 'starting')] }, [{ type: 'start', endpointId: 'e', count: 1 }]],
    ['running workers keep their place', { queued: 1, workers: [w('a', 'running'), w('b', 'running')] }, [{ type: 'start', endpointId: 'e', count: 1 }]],
    ['lowPriority jobs start no worker', { queuedLow: 5 }, []],
    ['lowPriority jobs keep idle workers', { queuedLow: 1, workers: [w('a', 'idle', 60_000)] }, []],
    ['holds starts during a crash backoff', { queued: 1, backoffMs: 500 }, []],
    ['stops a worker idle past the timeout', { workers: [w('a', 'idle', 10_000)] }, [{ type: 'stop', endpointId: 'e', workerId: 'a', reason: 'idle for 10000 ms' }]],
    ['keeps a worker idle less than the timeout', { workers: [w('a', 'idle', 9_999)] }, []],
    ['never stops below min', { min: 1, workers: [w('a', 'idle', 60_000), w('b', 'idle', 50_000)] }, [{ type: 'stop', endpointId: 'e', workerId: 'a', reason: 'idle for 60000 ms' }]],
    ['stops idle workers above max at once', { max: 1, workers: [w('a', 'idle', 5), w('b', 'running')] }, [{ type: 'stop', endpointId: 'e', workerId: 'a', reason: 'more than workers.max (1)' }]],
    ['stops everything of a deleted endpoint', { exists: false, workers: [w('a', 'running'), w('b', 'stopping')] }, [{ type: 'stop', endpointId: 'e', workerId: 'a', reason: 'the endpoint is gone' }]],
  ]
  for (const [name, input, actions] of cases) {
    it(name, () => expect(planScaling([ep(input)])).toEqual(actions))
  }
})
