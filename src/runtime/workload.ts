import type { PublishedPort, RuntimeRef, Workload, WorkloadExit } from './RuntimeDriver.js'
import type { WorkerLog } from './WorkerLog.js'

/**
 * A Workload whose stop asks with `signal('SIGTERM')`, then forces with `signal('SIGKILL')` once `graceMs`
 * has passed without an exit; stop resolves when it has ended.
 */
export function workload(
  ref: RuntimeRef,
  ports: PublishedPort[],
  exited: Promise<WorkloadExit>,
  logs: WorkerLog,
  signal: (s: 'SIGTERM' | 'SIGKILL') => Promise<void> | void,
): Workload {
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
      let grace: NodeJS.Timeout | undefined
      const timer = new Promise<'timeout'>((r) => (grace = setTimeout(() => r('timeout'), graceMs).unref()))
      // Cleared once it ended: an armed timer would keep this workload (its process, its log) for the whole grace period.
      const outcome = await Promise.race([exited, timer]).finally(() => clearTimeout(grace))
      if (outcome === 'timeout') await signal('SIGKILL')
      await exited
    },
  }
}
