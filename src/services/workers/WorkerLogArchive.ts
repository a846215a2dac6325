import { WorkerLog } from '../../runtime/WorkerLog.js'

/** Logs of workers that ended: the last 200 in memory, older ones read back from their log files. */
export class WorkerLogArchive {
  private readonly ended = new Map<string, WorkerLog>()

  /** `logPath`: where the runtime wrote a worker's log (RuntimeDriver.logPath). */
  constructor(private readonly logPath: (workerId: string) => string) {}

  remember(workerId: string, logs: WorkerLog): void {
    this.ended.set(workerId, logs)
    if (this.ended.size > 200) this.ended.delete(this.ended.keys().next().value!)
  }

  /** The log of a worker that is no longer running. */
  find(workerId: string): WorkerLog {
    return this.ended.get(workerId) ?? WorkerLog.fromFile(this.logPath(workerId))
  }
}
