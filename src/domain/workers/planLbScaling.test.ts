import { describe, expect, it } from 'vitest'
import { healthOf, lbPorts, pickWorker, planLbScaling, type LbScaling } from './planLbScaling.js'
import type { DemandSample, ScaleAction, WorkerSnapshot } from './planScaling.js'

const lb = (o: Partial<LbScaling> & { waiting?: number; inFlight?: number }): LbScaling => {
  const { waiting = 0, inFlight = 0, ...rest } = o
  return {
    endpointId: 'e',
    exists: true,
    requestCount: 2,
    demand: { waiting, inFlight, oldestWaitMs: waiting > 0 ? 50 : 0 },
    min: 0,
    max: 3,
    idleTimeoutMs: 10_000,
    flashboot: 'OFF',
    parkWindowMs: 0,
    workers: [],
    backoffMs: 0,
    history: [],
    ...rest,
  }
}
const w = (
  id: string,
  state: WorkerSnapshot['state'],
  inFlight = 0,
  idleForMs = 0,
  o: Partial<WorkerSnapshot> = {},
): WorkerSnapshot => ({ id, state, idleForMs, inFlight, stale: false, retiring: false, ...o })
const h = (agoMs: number, desired: number): DemandSample => ({ agoMs, queued: 0, desired })
const start = (count: number): ScaleAction => ({ type: 'start', endpointId: 'e', count })
const stop = (workerId: string, reason: string): ScaleAction => ({ type: 'stop', endpointId: 'e', workerId, reason })
const retire = (workerId: string, reason: string): ScaleAction => ({
  type: 'retire',
  endpointId: 'e',
  workerId,
  reason,
})

describe('planLbScaling', () => {
  const cases: Array<[string, Parameters<typeof lb>[0], ScaleAction[], number]> = [
    ['a request with no worker is a cold start: one worker at once', { waiting: 1 }, [start(1)], 1],
    [
      'in flight plus waiting over requestCount: ceil of the ratio',
      { waiting: 3, inFlight: 2, workers: [w('a', 'running', 2)] },
      [start(2)],
      3,
    ],
    ['never above workers.max', { waiting: 10, inFlight: 2, workers: [w('a', 'running', 2)] }, [start(2)], 3],
    ['workers.min stays up with no traffic', { min: 1, workers: [w('a', 'idle', 0, 60_000)] }, [], 1],
    [
      'scale to zero once idle past the idle timeout',
      { workers: [w('a', 'idle', 0, 10_000)] },
      [stop('a', 'idle for 10000 ms')],
      0,
    ],
    ['an idle worker within the idle timeout is kept', { workers: [w('a', 'idle', 0, 9_000)] }, [], 0],
    [
      'hysteresis: demand seen within the window keeps workers',
      { workers: [w('a', 'idle', 0, 20_000), w('b', 'running', 1)], inFlight: 1, history: [h(5_000, 2)] },
      [],
      1,
    ],
    [
      'a starting worker covers the waiting requests (no second start)',
      { waiting: 1, workers: [w('a', 'starting')] },
      [],
      1,
    ],
    ['a crash back-off holds the cold start', { waiting: 1, backoffMs: 500 }, [], 1],
    [
      'over workers.max (lowered): a busy worker drains instead of dropping requests',
      { max: 1, inFlight: 2, workers: [w('a', 'running', 1), w('b', 'running', 1)] },
      [retire('a', 'more than workers.max (1)')],
      1,
    ],
    [
      'a worker of an older release drains its requests, then is replaced',
      { inFlight: 1, workers: [w('a', 'running', 1, 0, { stale: true })] },
      [retire('a', 'runs an older release: replaced once its jobs end'), start(1)],
      1,
    ],
    [
      'an endpoint that is gone stops all its workers',
      { exists: false, workers: [w('a', 'idle')] },
      [stop('a', 'the endpoint is gone')],
      0,
    ],
  ]
  for (const [name, input, actions, desired] of cases) {
    it(name, () => {
      const d = planLbScaling(lb(input))
      expect(d.actions).toEqual(actions)
      expect(d.desired).toBe(desired)
    })
  }
})

describe('pickWorker (least in flight)', () => {
  it.each([
    [
      'the least busy worker',
      [
        { id: 'a', inFlight: 2 },
        { id: 'b', inFlight: 0 },
        { id: 'c', inFlight: 1 },
      ],
      4,
      'b',
    ],
    [
      'ties go to the first listed',
      [
        { id: 'a', inFlight: 1 },
        { id: 'b', inFlight: 1 },
      ],
      4,
      'a',
    ],
    [
      'full workers are skipped',
      [
        { id: 'a', inFlight: 2 },
        { id: 'b', inFlight: 1 },
      ],
      2,
      'b',
    ],
    ['all full: the request waits', [{ id: 'a', inFlight: 2 }], 2, null],
    ['no worker: the request waits', [], 2, null],
  ])('%s', (_name, candidates, capacity, picked) => {
    expect(pickWorker(candidates, capacity)).toBe(picked)
  })
})

describe('health and ports', () => {
  it.each([
    [200, 'READY'],
    [204, 'INITIALIZING'],
    [500, 'UNHEALTHY'],
    [404, 'UNHEALTHY'],
    [null, 'UNHEALTHY'],
  ] as const)('health answer %s is %s', (status, health) => {
    expect(healthOf(status)).toBe(health)
  })
  it.each([
    [{}, { port: 80, healthPort: 80 }],
    [{ PORT: '8000' }, { port: 8000, healthPort: 8000 }],
    [
      { PORT: '8000', PORT_HEALTH: '8001' },
      { port: 8000, healthPort: 8001 },
    ],
    [{ PORT: 'x' }, { port: 80, healthPort: 80 }],
  ])('ports of env %j', (env, ports) => {
    expect(lbPorts(env)).toEqual(ports)
  })
})
