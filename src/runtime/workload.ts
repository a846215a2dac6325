import type { PublishedPort, RuntimeRef, Workload, WorkloadExit } from './RuntimeDriver.js'
import type { WorkerLog } from './WorkerLog.js'

/**
 * A Workload whose stop asks with `signal('SIGTERM')`, then forces with `signal('SIGKILL')` once `graceMs`
 * has passed without an exit; stop resolves when it has ended.
 */
export function workload(ref: RuntimeRef, ports: PublishedPort[], exited: Promise<WorkloadExit>, logs: WorkerLog, signal: (s: 'SIGTERM' | 'SIGKILL') => Promise<void> | void): Workload {
  let done = false
  void exited.then(() => (done = true))
  return {
    ref,
    ports,
    exited,
    logs,
    async stop(graceMs: number) {
      if (done) return
      await signal('SIGTERM')
      const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), graceMs).unref())
      if ((await Promise.race([exited, timer])) === 'timeout') await signal('SIGKILL')
      await exited
    },
  }
}
