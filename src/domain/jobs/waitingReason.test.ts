import { describe, expect, it } from 'vitest'
import type { EndpointScaling, WorkerSnapshot } from '../workers/planScaling.js'
import { waitingReason, type WaitingContext } from './waitingReason.js'

const ep = (o: Partial<EndpointScaling>): EndpointScaling => ({
  endpointId: 'e',
  exists: true,
  policy: { type: 'QUEUE_DELAY', queueDelayMs: 2_000 },
  min: 0,
  max: 2,
  idleTimeoutMs: 10_000,
  flashboot: 'OFF',
  parkWindowMs: 0,
  queued: 1,
  queuedLow: 0,
  inProgress: 0,
  oldestWaitMs: 0,
  workers: [],
  backoffMs: 0,
  history: [],
  ...o,
})
const w = (state: WorkerSnapshot['state'], o: Partial<WorkerSnapshot> = {}): WorkerSnapshot => ({
  id: state,
  state,
  idleForMs: 0,
  inFlight: 0,
  stale: false,
  retiring: false,
  ...o,
})
const ctx: WaitingContext = {
  noCapacity: 'all GPUs of the selected types (NVIDIA L4) are in use',
  failures: 3,
  lastFailure: 'worker w1 exited (code 1)',
}

describe('waitingReason', () => {
  const cases: Array<[string, Partial<EndpointScaling>, boolean, string | null, RegExp?]> = [
    ['none while a worker is idle', { workers: [w('idle')] }, false, null],
    ['lowPriority with no worker', {}, true, 'LOW_PRIORITY', /never start workers/],
    ['lowPriority behind busy workers', { workers: [w('running')] }, true, 'LOW_PRIORITY', /one of the 1 busy workers/],
    ['workers.max 0', { max: 0 }, false, 'MAX_REACHED', /workers\.max is 0/],
    [
      'no capacity',
      { workers: [w('throttled')] },
      false,
      'NO_CAPACITY',
      /no capacity for 1 wanted worker\(s\): all GPUs of the selected types \(NVIDIA L4\) are in use/,
    ],
    [
      'crash loop',
      { workers: [w('unhealthy')], backoffMs: 4_000 },
      false,
      'CRASH_LOOP',
      /crash-looping \(3 failure\(s\) in a row; last: worker w1 exited \(code 1\)\); next start in 4 s/,
    ],
    ['cold start', { workers: [w('starting')] }, false, 'COLD_START', /1 worker\(s\) starting/],
    [
      'max reached',
      { workers: [w('running', { id: 'a' }), w('running', { id: 'b' })] },
      false,
      'MAX_REACHED',
      /all 2 workers \(workers\.max\) are busy/,
    ],
    [
      'rollout holding the max',
      { workers: [w('running', { id: 'a' }), w('running', { id: 'b', stale: true })] },
      false,
      'ROLLOUT',
      /1 of them run an older release/,
    ],
    [
      'queueDelay not elapsed',
      { workers: [w('running')], oldestWaitMs: 500 },
      false,
      'QUEUE_DELAY',
      /once a job has waited 2 s/,
    ],
    ['nothing to say once workers are being added', { workers: [w('running')], oldestWaitMs: 2_500 }, false, null],
  ]
  for (const [name, input, low, code, message] of cases) {
    it(name, () => {
      const r = waitingReason(ep(input), ctx, low)
      expect(r?.code ?? null).toBe(code)
      if (message) expect(r?.message).toMatch(message)
    })
  }

  it('no capacity for a starting worker the cluster cannot place (Kubernetes: unschedulable)', () => {
    const r = waitingReason(
      ep({ workers: [w('starting')] }),
      { ...ctx, pendingCapacity: 'NO_CAPACITY: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.' },
      false,
    )
    expect(r).toEqual({
      code: 'NO_CAPACITY',
      message:
        '1 worker(s) starting wait for the cluster to place them: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.',
    })
  })

  it('QUOTA, with the numbers, when the placement was refused by a quota rather than for capacity', () => {
    const r = waitingReason(
      ep({ workers: [w('running'), w('throttled')] }),
      {
        ...ctx,
        noCapacity:
          'QUOTA: quota gpus (GPUs held by its workers and pods): 1 GPU in use + 1 requested would pass the limit of 1 GPU',
      },
      false,
    )
    expect(r).toEqual({
      code: 'QUOTA',
      message:
        "1 wanted worker(s) wait for the account's quota: quota gpus (GPUs held by its workers and pods): 1 GPU in use + 1 requested would pass the limit of 1 GPU",
    })
  })
})
