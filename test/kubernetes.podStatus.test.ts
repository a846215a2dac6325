import type { V1ContainerState, V1Pod, V1PodCondition } from '@kubernetes/client-node'
import { describe, expect, it } from 'vitest'
import {
  containerStarted,
  exitOf,
  isLive,
  isRunning,
  type StartState,
  startStateOf,
} from '../src/runtime/kubernetes/podStatus.js'
import type { WorkloadExit } from '../src/runtime/RuntimeDriver.js'

/** A Pod of Hangar's as the API server reports it: its phase, its container's state, its conditions. */
function pod(o: {
  phase?: string
  state?: V1ContainerState
  conditions?: V1PodCondition[]
  nodeName?: string
  reason?: string
  message?: string
  deleting?: boolean
}): V1Pod {
  return {
    metadata: {
      name: 'hangar-worker-w1-abc123',
      namespace: 'hangar',
      deletionTimestamp: o.deleting ? new Date(0) : undefined,
    },
    spec: { nodeName: o.nodeName, containers: [{ name: 'main', image: 'ghcr.io/acme/worker:1' }] },
    status: {
      phase: o.phase ?? 'Pending',
      reason: o.reason,
      message: o.message,
      conditions: o.conditions,
      containerStatuses: o.state
        ? [{ name: 'main', image: 'ghcr.io/acme/worker:1', imageID: '', ready: false, restartCount: 0, state: o.state }]
        : undefined,
    },
  }
}

const unschedulable: V1PodCondition = {
  type: 'PodScheduled',
  status: 'False',
  reason: 'Unschedulable',
  message: '0/1 nodes are available: 1 Insufficient nvidia.com/gpu.',
}

describe('where the start of a Pod stands', () => {
  const cases: Array<[string, V1Pod | null, StartState]> = [
    ['accepted, not yet scheduled', pod({}), { kind: 'pending' }],
    [
      'no node can take it',
      pod({ conditions: [unschedulable] }),
      { kind: 'unschedulable', why: 'NO_CAPACITY: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu.' },
    ],
    [
      'unschedulable without a message',
      pod({ conditions: [{ ...unschedulable, message: undefined }] }),
      { kind: 'unschedulable', why: 'NO_CAPACITY: no node fits' },
    ],
    [
      'scheduled, but not for lack of room (another reason)',
      pod({ conditions: [{ type: 'PodScheduled', status: 'False', reason: 'SchedulerError' }] }),
      { kind: 'pending' },
    ],
    [
      'placed, its container being created',
      pod({ nodeName: 'node1', state: { waiting: { reason: 'ContainerCreating' } } }),
      { kind: 'creating' },
    ],
    [
      'ContainerCreating before a node is known',
      pod({ state: { waiting: { reason: 'ContainerCreating' } } }),
      { kind: 'pending' },
    ],
    [
      'the image cannot be pulled',
      pod({
        nodeName: 'node1',
        state: { waiting: { reason: 'ErrImagePull', message: 'pull access denied for ghcr.io/acme/worker' } },
      }),
      { kind: 'pullFailed', reason: 'ErrImagePull: pull access denied for ghcr.io/acme/worker' },
    ],
    [
      'pull back-off without a message names the image',
      pod({ nodeName: 'node1', state: { waiting: { reason: 'ImagePullBackOff' } } }),
      { kind: 'pullFailed', reason: 'ImagePullBackOff: ghcr.io/acme/worker:1' },
    ],
    [
      'an invalid image name',
      pod({ state: { waiting: { reason: 'InvalidImageName', message: 'couldn\'t parse image reference "A:b:c"' } } }),
      { kind: 'pullFailed', reason: 'InvalidImageName: couldn\'t parse image reference "A:b:c"' },
    ],
    [
      'a config the kubelet cannot make a container of',
      pod({
        state: { waiting: { reason: 'CreateContainerConfigError', message: 'secret "x" not found' } },
      }),
      { kind: 'cannotStart', reason: 'CreateContainerConfigError: secret "x" not found' },
    ],
    [
      'the runtime cannot create it',
      pod({ state: { waiting: { reason: 'CreateContainerError' } } }),
      { kind: 'cannotStart', reason: 'CreateContainerError:' },
    ],
    ['running', pod({ phase: 'Running', state: { running: { startedAt: new Date(0) } } }), { kind: 'started' }],
    [
      'already ended (a short program): followed, its end read from the Pod',
      pod({ phase: 'Failed', state: { terminated: { exitCode: 3, reason: 'Error' } } }),
      { kind: 'started' },
    ],
    [
      'refused by its node before its container ran',
      pod({ phase: 'Failed', reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu" }),
      { kind: 'ended', reason: "OutOfcpu: Node didn't have enough resource: cpu" },
    ],
    [
      'evicted before its container ran',
      pod({ phase: 'Failed', reason: 'Evicted', state: { waiting: { reason: 'ContainerCreating' } } }),
      { kind: 'ended', reason: 'Evicted' },
    ],
    ['deleted', null, { kind: 'deleted' }],
  ]
  it.each(cases)('%s', (_what, p, expected) => {
    expect(startStateOf(p)).toEqual(expected)
  })
})

describe('how a workload ended', () => {
  const running = pod({ phase: 'Running', state: { running: {} } })
  const cases: Array<[string, V1Pod | null, V1Pod, WorkloadExit | null]> = [
    ['still running', running, running, null],
    ['still pending', pod({}), pod({}), null],
    [
      'exited 0',
      pod({ phase: 'Succeeded', state: { terminated: { exitCode: 0, reason: 'Completed' } } }),
      running,
      { code: 0, signal: null },
    ],
    [
      'exited with an error',
      pod({ phase: 'Failed', state: { terminated: { exitCode: 2, reason: 'Error' } } }),
      running,
      { code: 2, signal: null },
    ],
    [
      'killed by a signal',
      pod({ phase: 'Failed', state: { terminated: { exitCode: 143, signal: 15, reason: 'Error' } } }),
      running,
      { code: 143, signal: 'SIG15' },
    ],
    [
      'out of memory',
      pod({ phase: 'Failed', state: { terminated: { exitCode: 137, reason: 'OOMKilled' } } }),
      running,
      { code: 137, signal: null, reason: 'out of memory (OOM killed, code 137)' },
    ],
    [
      'another reason of the runtime, with its message',
      pod({
        phase: 'Failed',
        state: { terminated: { exitCode: 128, reason: 'StartError', message: 'exec: "nope": not found\n' } },
      }),
      running,
      { code: 128, signal: null, reason: 'StartError: exec: "nope": not found (code 128)' },
    ],
    [
      'evicted while running: the eviction says why',
      pod({
        phase: 'Failed',
        reason: 'Evicted',
        message: 'The node was low on resource: memory.',
        state: { terminated: { exitCode: 137, reason: 'Error' } },
      }),
      running,
      { code: 137, signal: null, reason: 'Evicted: The node was low on resource: memory. (code 137)' },
    ],
    [
      'out of memory on an evicted Pod is still out of memory',
      pod({ phase: 'Failed', reason: 'Evicted', state: { terminated: { exitCode: 137, reason: 'OOMKilled' } } }),
      running,
      { code: 137, signal: null, reason: 'out of memory (OOM killed, code 137)' },
    ],
    [
      'deleted while running',
      null,
      running,
      { code: null, signal: 'SIGKILL', reason: 'Pod hangar/hangar-worker-w1-abc123 was deleted' },
    ],
    [
      'deleted right after it ended: the exit stays',
      null,
      pod({ phase: 'Failed', state: { terminated: { exitCode: 1, reason: 'Error' } } }),
      { code: 1, signal: null },
    ],
    [
      'ended without a container status (node shut down)',
      pod({
        phase: 'Failed',
        reason: 'Terminated',
        message: 'Pod was terminated in response to imminent node shutdown.',
      }),
      running,
      { code: null, signal: null, reason: 'Terminated: Pod was terminated in response to imminent node shutdown.' },
    ],
    [
      'failed without a reason',
      pod({ phase: 'Failed' }),
      running,
      { code: null, signal: null, reason: 'the Pod failed' },
    ],
  ]
  it.each(cases)('%s', (_what, seen, last, expected) => {
    expect(exitOf(seen, seen ?? last)).toEqual(expected)
  })
})

describe('whether a Pod runs', () => {
  const cases: Array<[string, V1Pod, { running: boolean; live: boolean; started: boolean }]> = [
    ['pending', pod({}), { running: true, live: true, started: false }],
    ['running', pod({ phase: 'Running', state: { running: {} } }), { running: true, live: true, started: true }],
    [
      'running, being deleted',
      pod({ phase: 'Running', state: { running: {} }, deleting: true }),
      { running: true, live: false, started: true },
    ],
    [
      'ended',
      pod({ phase: 'Succeeded', state: { terminated: { exitCode: 0 } } }),
      { running: false, live: false, started: true },
    ],
    ['node lost (Unknown)', pod({ phase: 'Unknown' }), { running: false, live: false, started: false }],
  ]
  it.each(cases)('%s', (_what, p, expected) => {
    expect({ running: isRunning(p), live: isLive(p), started: containerStarted(p) }).toEqual(expected)
  })
})
