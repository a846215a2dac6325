import type { CrashBackoff } from './CrashBackoff.js'
import type { LiveWorker } from './LiveWorker.js'
import type { LiveWorkers } from './LiveWorkers.js'
import type { WorkerLogArchive } from './WorkerLogArchive.js'
import type { HttpAddress, WorkerServiceDeps } from './types.js'

/**
 * What the parts of WorkerService (lifecycle, recovery, directories, read models) share: the state of this
 * process's live workers, and those of WorkerService's deps a part uses (`D`: each part names its own, so what it
 * depends on shows in its constructor). Only the leader holds live workers; on a follower the maps are empty.
 */
export interface WorkerContext<D extends keyof WorkerServiceDeps = keyof WorkerServiceDeps> {
  readonly deps: Pick<WorkerServiceDeps, D>
  /** Monotonic ms for heartbeats, idle and parked times, crash back-off (see WorkerServiceDeps.monotonic). */
  readonly mono: () => number
  readonly live: LiveWorkers
  /** HTTP addresses of load-balancing workers. */
  readonly http: Map<string, HttpAddress>
  /** Workers handed to the next leader (`follow`): their exit, seen here, is not ours to act on. */
  readonly detached: WeakSet<LiveWorker>
  readonly endedLogs: WorkerLogArchive
  readonly backoff: CrashBackoff
  /** Tells followers how a worker stands now, when this process leads (see WorkerDirectory.describe). */
  readonly describe: (w: LiveWorker) => void
}
