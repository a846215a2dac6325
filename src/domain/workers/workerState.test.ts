import { describe, expect, it } from 'vitest'
import { activityOf, apiStatusOf, nextPhase, storedStateOf, type WorkerEvent, type WorkerPhase } from './workerState.js'

const PHASES: WorkerPhase[] = ['throttled', 'starting', 'ready', 'parked', 'stopping', 'unhealthy']

// Every (phase, event) pair: the phase it leads to, or null where the event does not apply.
const TABLE: Record<WorkerEvent, Partial<Record<WorkerPhase, WorkerPhase>>> = {
  launch: { throttled: 'starting' },
  adopt: { throttled: 'starting' },
  callIn: { starting: 'ready' },
  park: { ready: 'parked' },
  unpark: { parked: 'ready' },
  stop: { starting: 'stopping', ready: 'stopping', parked: 'stopping' },
  lose: { starting: 'stopping', ready: 'stopping', parked: 'stopping' },
  crash: { starting: 'unhealthy', ready: 'unhealthy', stopping: 'unhealthy' },
}

describe('worker state machine', () => {
  for (const [event, moves] of Object.entries(TABLE) as Array<
    [WorkerEvent, Partial<Record<WorkerPhase, WorkerPhase>>]
  >) {
    for (const from of PHASES) {
      const to = moves[from] ?? null
      it(`${event} from ${from} -> ${to ?? 'refused'}`, () => {
        expect(nextPhase(from, event)).toBe(to)
      })
    }
  }

  it('splits ready into idle and running, for the scaler and the API', () => {
    expect(activityOf('ready', 0)).toBe('idle')
    expect(activityOf('ready', 2)).toBe('running')
    expect(activityOf('parked', 0)).toBe('parked')
    expect(PHASES.map((p) => apiStatusOf(p, 1))).toEqual([
      'THROTTLED',
      'INITIALIZING',
      'RUNNING',
      'PARKED',
      null,
      'UNHEALTHY',
    ])
    expect(apiStatusOf('ready', 0)).toBe('IDLE')
  })
})

describe('the stored worker state, derived from the phase', () => {
  it('is STARTING, READY (parked too), STOPPING while the worker lives; FAILED when it failed; EXITED when it was stopped', () => {
    expect(
      (['starting', 'ready', 'parked', 'stopping', 'unhealthy', 'exited', 'failed'] as const).map(storedStateOf),
    ).toEqual(['STARTING', 'READY', 'READY', 'STOPPING', 'FAILED', 'EXITED', 'FAILED'])
  })

  it('follows every move of the phase table that leaves a worker with a record', () => {
    expect(storedStateOf(nextPhase('throttled', 'launch')!)).toBe('STARTING')
    expect(storedStateOf(nextPhase('starting', 'callIn')!)).toBe('READY')
    expect(storedStateOf(nextPhase('ready', 'stop')!)).toBe('STOPPING')
    expect(storedStateOf(nextPhase('ready', 'crash')!)).toBe('FAILED')
  })
})
