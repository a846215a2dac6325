import { describe, expect, it } from 'vitest'
import type { PodAction, PodStatus } from '../../contract/pod.js'
import { newPodRecord, podActions, type PodSpec } from './pod.js'
import { nextPodStatus, type PodEvent } from './podState.js'

const STATUSES: PodStatus[] = ['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR', 'TERMINATED']

describe('the pod state machine', () => {
  it('walks the legal flows: create, start, run, stop, start again, fail, terminate', () => {
    const walk = (from: PodStatus, ...events: PodEvent[]) =>
      events.reduce<PodStatus | null>((s, e) => (s ? nextPodStatus(s, e) : null), from)
    expect(walk('PROVISIONING', 'launch', 'run')).toBe('RUNNING')
    expect(walk('RUNNING', 'stop', 'place', 'launch', 'run', 'exit')).toBe('EXITED')
    expect(walk('RUNNING', 'fail', 'place', 'launch', 'fail', 'terminate')).toBe('TERMINATED')
    expect(walk('RUNNING', 'place', 'launch', 'run')).toBe('RUNNING') // restart
  })

  it('refuses illegal moves', () => {
    expect(nextPodStatus('EXITED', 'stop')).toBeNull()
    expect(nextPodStatus('EXITED', 'run')).toBeNull()
    expect(nextPodStatus('EXITED', 'exit')).toBeNull()
    expect(nextPodStatus('ERROR', 'launch')).toBeNull()
    expect(nextPodStatus('STARTING', 'exit')).toBeNull()
    for (const e of ['place', 'launch', 'run', 'fail', 'exit', 'stop', 'terminate'] as const)
      expect(nextPodStatus('TERMINATED', e)).toBeNull()
  })

  it('allows every action the API offers in a status (start/restart are place, stop is stop, terminate is terminate)', () => {
    const eventOf: Record<PodAction, PodEvent> = {
      start: 'place',
      restart: 'place',
      stop: 'stop',
      terminate: 'terminate',
    }
    for (const status of STATUSES)
      for (const action of podActions(status, false))
        expect([status, action, nextPodStatus(status, eventOf[action])]).not.toContain(null)
  })

  it('creates every pod, standalone or a cluster member, PROVISIONING with nothing running', () => {
    const spec = { name: 'p' } as PodSpec
    const pod = newPodRecord(spec, { id: 'pod_1', accountId: 'a', createdAt: '2026-01-01T00:00:00.000Z' })
    expect(pod).toMatchObject({
      name: 'p',
      status: 'PROVISIONING',
      placement: null,
      runtimeRef: null,
      portMappings: [],
      startedAt: null,
      lastError: null,
      cluster: null,
    })
  })
})
