import { describe, expect, it } from 'vitest'
import { collectGarbage } from '../../test/helpers/heap.js'
import type { WorkloadExit } from './RuntimeDriver.js'
import { workload } from './workload.js'
import { WorkerLog } from './WorkerLog.js'

/** A workload whose program ends on SIGTERM (or only on SIGKILL with `ignoresTerm`); `signals` lists what it was sent. */
function program(opts: { ignoresTerm?: boolean } = {}) {
  let exit!: (e: WorkloadExit) => void
  const exited = new Promise<WorkloadExit>((resolve) => (exit = resolve))
  const signals: string[] = []
  const logs = new WorkerLog(null)
  // As in the drivers, the signal function shares its scope with what the workload holds (its log here).
  const w = workload('test:1', [], exited, logs, (signal) => {
    signals.push(signal)
    logs.append('system', `sent ${signal}`)
    if (signal === 'SIGKILL' || !opts.ignoresTerm) setImmediate(() => exit({ code: null, signal }))
  })
  return { w, logs, signals }
}

describe('workload stop', () => {
  it('asks with SIGTERM and forces with SIGKILL once the grace period passes', async () => {
    const polite = program()
    await polite.w.stop(10_000)
    expect(polite.signals).toEqual(['SIGTERM'])
    const stubborn = program({ ignoresTerm: true })
    await stubborn.w.stop(50)
    expect(stubborn.signals).toEqual(['SIGTERM', 'SIGKILL'])
  })

  it('keeps nothing of a workload that ended before its grace period did (a pod stopped with a long grace)', async () => {
    const log = await (async () => {
      const { w, logs } = program()
      await w.stop(600_000)
      return new WeakRef(logs)
    })()
    await collectGarbage()
    expect(log.deref(), 'the grace timer still holds the stopped workload').toBeUndefined()
  })
})
