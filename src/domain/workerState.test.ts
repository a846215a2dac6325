import { describe, expect, it } from 'vitest'
import { activityOf, apiStatusOf, nextPhase, type WorkerEvent, type WorkerPhase } from './workerState.js'

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
  for (const [event, moves] of Object.entries(TABLE) as Array<[WorkerEvent, Partial<Record<WorkerPhase, WorkerPhase>>]>) {
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
    expect(PHASES.map((p) => apiStatusOf(p, 1))).toEqual(['THROTTLED', 'INITIALIZING', 'RUNNING', 'PARKED', null, 'UNHEALTHY'])
    expect(apiStatusOf('ready', 0)).toBe('IDLE')
  })
})
