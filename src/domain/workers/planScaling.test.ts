import { describe, expect, it } from 'vitest'
import {
  planScaling,
  unparkForJob,
  type DemandSample,
  type EndpointScaling,
  type ScaleAction,
  type WorkerSnapshot,
} from './planScaling.js'

const QD = { type: 'QUEUE_DELAY', queueDelayMs: 1_000 } as const
const RC = (requestCount: number) => ({ type: 'REQUEST_COUNT', requestCount }) as const
const ep = (o: Partial<EndpointScaling>): EndpointScaling => ({
  endpointId: 'e',
  exists: true,
  policy: QD,
  min: 0,
  max: 3,
  idleTimeoutMs: 10_000,
  flashboot: 'OFF',
  parkWindowMs: 0,
  queued: 0,
  queuedLow: 0,
  inProgress: 0,
  oldestWaitMs: 0,
  workers: [],
  backoffMs: 0,
  history: [],
  ...o,
})
const w = (
  id: string,
  state: WorkerSnapshot['state'],
  idleForMs = 0,
  o: Partial<WorkerSnapshot> = {},
): WorkerSnapshot => ({
  id,
  state,
  idleForMs,
  inFlight: state === 'running' ? 1 : 0,
  stale: false,
  retiring: false,
  ...o,
})
const h = (agoMs: number, queued: number, desired: number): DemandSample => ({ agoMs, queued, desired })
const start = (count: number): ScaleAction => ({ type: 'start', endpointId: 'e', count })
const act = (type: 'unpark' | 'place' | 'replace', workerId: string): ScaleAction => ({
  type,
  endpointId: 'e',
  workerId,
})
const stop = (workerId: string, reason: string): ScaleAction => ({ type: 'stop', endpointId: 'e', workerId, reason })
const park = (workerId: string, reason: string): ScaleAction => ({ type: 'park', endpointId: 'e', workerId, reason })
const retire = (workerId: string, reason: string): ScaleAction => ({
  type: 'retire',
  endpointId: 'e',
  workerId,
  reason,
})
const OLD = 'runs an older release'
const RETIRE_OLD = 'runs an older release: replaced once its jobs end'

type Case = [name: string, input: Partial<EndpointScaling>, actions: ScaleAction[]]

function table(cases: Case[]): void {
  for (const [name, input, actions] of cases) it(name, () => expect(planScaling(ep(input)).actions).toEqual(actions))
}

describe('planScaling', () => {
  describe('QUEUE_DELAY', () => {
    table([
      ['does nothing for an idle endpoint without min', {}, []],
      ['starts one worker at once for a job on an endpoint with no worker (cold start)', { queued: 1 }, [start(1)]],
      ['starts one worker for a few jobs arriving together (not a burst)', { queued: 3 }, [start(1)]],
      [
        'holds while the oldest job waited less than queueDelay',
        { queued: 2, oldestWaitMs: 999, workers: [w('a', 'running')] },
        [],
      ],
      [
        'adds one worker per waiting job once the oldest waited queueDelay',
        { queued: 2, oldestWaitMs: 1_000, workers: [w('a', 'running')] },
        [start(2)],
      ],
      [
        'counts workers already starting against waiting jobs',
        { queued: 2, oldestWaitMs: 1_500, workers: [w('a', 'running'), w('b', 'starting')] },
        [start(1)],
      ],
      [
        'keeps an idle worker that is about to take a waiting job',
        { queued: 1, workers: [w('a', 'idle', 60_000)] },
        [],
      ],
    ])
  })

  describe('REQUEST_COUNT', () => {
    table([
      [
        'wants ceil((queued + in progress) / requestCount) workers',
        { policy: RC(2), queued: 3, inProgress: 2, workers: [w('a', 'running'), w('b', 'running')] },
        [start(1)],
      ],
      [
        'adds nothing while the load fits the workers it has',
        { policy: RC(4), queued: 2, inProgress: 2, workers: [w('a', 'running')] },
        [],
      ],
      ['scales from zero on the first job without waiting', { policy: RC(1), queued: 1 }, [start(1)]],
      [
        'stops an idle worker after the cool-down',
        { policy: RC(1), idleTimeoutMs: 5_000, workers: [w('a', 'idle', 5_000)] },
        [stop('a', 'idle for 5000 ms')],
      ],
    ])
  })

  describe('min and max', () => {
    table([
      ['keeps workers.min running', { min: 2 }, [start(2)]],
      ['never starts above workers.max', { queued: 10, oldestWaitMs: 5_000, workers: [w('a', 'running')] }, [start(2)]],
      ['starts nothing with workers.max 0', { max: 0, queued: 5, oldestWaitMs: 5_000 }, []],
      [
        'never stops below min',
        { min: 1, workers: [w('a', 'idle', 60_000), w('b', 'idle', 50_000)] },
        [stop('a', 'idle for 60000 ms')],
      ],
      [
        'stops idle workers above a lowered max at once',
        { max: 1, workers: [w('a', 'idle', 5), w('b', 'running')] },
        [stop('a', 'more than workers.max (1)')],
      ],
      [
        'retires busy workers above a lowered max (they finish their job)',
        { max: 1, workers: [w('a', 'running'), w('b', 'running')] },
        [retire('a', 'more than workers.max (1)')],
      ],
      [
        'retires no more once the retiring ones bring it back to max',
        { max: 1, inProgress: 2, workers: [w('a', 'running', 0, { retiring: true }), w('b', 'running')] },
        [],
      ],
    ])
  })

  describe('lowPriority', () => {
    table([
      ['starts no worker for lowPriority jobs', { queuedLow: 5 }, []],
      ['starts no worker for lowPriority jobs under REQUEST_COUNT', { policy: RC(1), queuedLow: 5 }, []],
      ['keeps idle workers while lowPriority jobs wait', { queuedLow: 1, workers: [w('a', 'idle', 60_000)] }, []],
    ])
  })

  describe('idle timeout', () => {
    table([
      [
        'stops a worker idle for workers.idleTimeout',
        { workers: [w('a', 'idle', 10_000)] },
        [stop('a', 'idle for 10000 ms')],
      ],
      ['keeps a worker idle for less', { workers: [w('a', 'idle', 9_999)] }, []],
      [
        'stops the longest idle first',
        { min: 1, workers: [w('a', 'idle', 20_000), w('b', 'idle', 30_000)] },
        [stop('b', 'idle for 30000 ms')],
      ],
    ])
  })

  describe('burst', () => {
    table([
      [
        'adds workers on this tick when waiting jobs jump, without waiting for queueDelay',
        { queued: 6, oldestWaitMs: 100, workers: [w('a', 'running')], history: [h(500, 1, 1)] },
        [start(2)],
      ],
      ['treats many jobs on an idle endpoint as a burst', { queued: 5 }, [start(3)]],
      [
        'is no burst when the jump is spread over more than the window',
        { queued: 6, oldestWaitMs: 100, workers: [w('a', 'running')], history: [h(3_000, 5, 1)] },
        [],
      ],
      [
        'needs a jump of at least the current worker count',
        { max: 10, queued: 4, oldestWaitMs: 100, workers: [0, 1, 2, 3, 4].map((i) => w(`r${i}`, 'running')) },
        [],
      ],
    ])
    it('says when the burst path fired', () => {
      expect(planScaling(ep({ queued: 5 })).burst).toBe(true)
      expect(planScaling(ep({ queued: 2 })).burst).toBe(false)
    })
  })

  describe('hysteresis', () => {
    table([
      [
        'keeps capacity the window wanted, though this tick wants less',
        {
          policy: RC(1),
          idleTimeoutMs: 5_000,
          inProgress: 1,
          workers: [w('a', 'running'), w('b', 'idle', 6_000)],
          history: [h(3_000, 0, 2)],
        },
        [],
      ],
      [
        'removes it once the whole window wanted less',
        {
          policy: RC(1),
          idleTimeoutMs: 5_000,
          inProgress: 1,
          workers: [w('a', 'running'), w('b', 'idle', 6_000)],
          history: [h(9_000, 0, 2), h(6_000, 0, 1)],
        },
        [stop('b', 'idle for 6000 ms')],
      ],
      [
        'counts a level still in effect when the window began',
        {
          policy: RC(1),
          idleTimeoutMs: 5_000,
          inProgress: 1,
          workers: [w('a', 'running'), w('b', 'idle', 6_000)],
          history: [h(6_000, 0, 2), h(4_000, 0, 1)],
        },
        [],
      ],
      [
        'does not remove a worker idle less than the timeout though load dropped (dead band)',
        { policy: RC(2), inProgress: 2, workers: [w('a', 'running', 0, { inFlight: 2 }), w('b', 'idle', 1_000)] },
        [],
      ],
    ])
  })

  describe('FlashBoot', () => {
    const fb = { flashboot: 'FLASHBOOT', parkWindowMs: 60_000 } as const
    table([
      [
        'parks an idle worker instead of stopping it',
        { ...fb, workers: [w('a', 'idle', 10_000)] },
        [park('a', 'idle for 10000 ms')],
      ],
      [
        'reuses a parked worker before starting a new one',
        { ...fb, min: 2, workers: [w('p', 'parked', 5_000)] },
        [act('unpark', 'p'), start(1)],
      ],
      [
        'does not count parked workers toward max',
        { ...fb, max: 1, queued: 1, workers: [w('p', 'parked', 5_000)] },
        [act('unpark', 'p')],
      ],
      [
        'reuses the most recently parked first',
        { ...fb, min: 1, workers: [w('p1', 'parked', 30_000), w('p2', 'parked', 1_000)] },
        [act('unpark', 'p2')],
      ],
      [
        'reuses parked workers even during a crash back-off',
        { ...fb, queued: 1, backoffMs: 5_000, workers: [w('p', 'parked', 1_000)] },
        [act('unpark', 'p')],
      ],
      [
        'stops a parked worker after the window',
        { ...fb, workers: [w('p', 'parked', 60_000)] },
        [stop('p', 'parked for 60000 ms (FlashBoot window 60000 ms)')],
      ],
      [
        'stops parked workers once FlashBoot is turned off',
        { workers: [w('p', 'parked', 10)] },
        [stop('p', 'FlashBoot is off')],
      ],
      [
        'gives a throttled slot to a parked worker',
        { ...fb, queued: 1, workers: [w('t', 'throttled', 100), w('p', 'parked', 100)] },
        [act('unpark', 'p'), stop('t', 'a parked worker took its place')],
      ],
    ])
  })

  describe('crash loops and capacity', () => {
    table([
      ['holds starts during a crash back-off', { queued: 1, backoffMs: 500 }, []],
      [
        'replaces an unhealthy worker once the back-off is over',
        { queued: 1, workers: [w('u', 'unhealthy', 2_000)] },
        [act('replace', 'u')],
      ],
      [
        'leaves an unhealthy worker alone during the back-off',
        { queued: 1, backoffMs: 1_000, workers: [w('u', 'unhealthy', 2_000)] },
        [],
      ],
      [
        'counts unhealthy workers toward max (no new worker beside a crash-looping one)',
        { max: 1, queued: 3, oldestWaitMs: 5_000, backoffMs: 1_000, workers: [w('u', 'unhealthy', 100)] },
        [],
      ],
      [
        'drops an unneeded unhealthy worker after the idle timeout',
        { workers: [w('u', 'unhealthy', 10_000)] },
        [stop('u', 'no longer needed')],
      ],
      ['retries placing a throttled worker', { queued: 1, workers: [w('t', 'throttled', 100)] }, [act('place', 't')]],
      [
        'drops a throttled worker no longer needed',
        { workers: [w('t', 'throttled', 100)] },
        [stop('t', 'no longer needed')],
      ],
      [
        'drops it at once, without the hysteresis of live workers',
        { workers: [w('t', 'throttled', 100)], history: [h(500, 1, 1)] },
        [stop('t', 'no longer needed')],
      ],
    ])
  })

  describe('rollout of a new release', () => {
    table([
      [
        'stops an idle stale worker and starts a replacement',
        { min: 1, workers: [w('a', 'idle', 10, { stale: true })] },
        [stop('a', OLD), start(1)],
      ],
      [
        'lets a busy stale worker finish; no replacement while it holds the max',
        { max: 1, queued: 1, oldestWaitMs: 2_000, inProgress: 1, workers: [w('a', 'running', 0, { stale: true })] },
        [retire('a', RETIRE_OLD)],
      ],
      [
        'starts the replacement beside it when max allows',
        { max: 2, queued: 1, oldestWaitMs: 2_000, inProgress: 1, workers: [w('a', 'running', 0, { stale: true })] },
        [retire('a', RETIRE_OLD), start(1)],
      ],
      [
        'does not retire a worker twice',
        { max: 1, inProgress: 1, workers: [w('a', 'running', 0, { stale: true, retiring: true })] },
        [],
      ],
      [
        'stops a stale parked worker',
        { flashboot: 'FLASHBOOT', parkWindowMs: 60_000, workers: [w('p', 'parked', 10, { stale: true })] },
        [stop('p', 'parked on an older release')],
      ],
    ])
  })

  describe('unparkForJob (a job queued where every worker is parked)', () => {
    const fb = { flashboot: 'FLASHBOOT', parkWindowMs: 60_000, queued: 1 } as const
    const cases: Array<[name: string, input: Partial<EndpointScaling>, ids: string[]]> = [
      [
        'takes back the most recently parked worker',
        { ...fb, workers: [w('p1', 'parked', 30_000), w('p2', 'parked', 1_000)] },
        ['p2'],
      ],
      // planScaling alone would take p back here (REQUEST_COUNT 1 with 2 jobs wants 2 workers): only the guard stops it.
      [
        'takes back none where another worker is counted: it takes the job, or the decision weighs the queue',
        { ...fb, policy: RC(1), queued: 2, workers: [w('a', 'running'), w('p', 'parked', 1_000)] },
        [],
      ],
      ['takes back none for a workers.max of 0', { ...fb, max: 0, workers: [w('p', 'parked', 1_000)] }, []],
      [
        'takes back none past the FlashBoot window, or of an older release',
        { ...fb, workers: [w('p1', 'parked', 60_000), w('p2', 'parked', 10, { stale: true })] },
        [],
      ],
      [
        'takes back as many as the decision would (REQUEST_COUNT)',
        { ...fb, policy: RC(1), queued: 2, workers: [w('p1', 'parked', 30_000), w('p2', 'parked', 1_000)] },
        ['p2', 'p1'],
      ],
    ]
    for (const [name, input, ids] of cases) it(name, () => expect(unparkForJob(ep(input))).toEqual(ids))
  })

  it('stops every worker of a deleted endpoint', () => {
    expect(
      planScaling(ep({ exists: false, workers: [w('a', 'running'), w('b', 'stopping'), w('p', 'parked', 5)] })).actions,
    ).toEqual([stop('a', 'the endpoint is gone'), stop('p', 'the endpoint is gone')])
  })
})
