import type { WorkerLog } from './WorkerLog.js'

/** What to run for one worker. */
export interface WorkerSpec {
  workerId: string
  /** argv: program and arguments (ENTRYPOINT + CMD). */
  command: string[]
  env: Record<string, string>
  /** The worker's container disk: created empty on every start, its working directory. */
  workDir: string
  /** Where its output is appended, beside the in-memory tail. */
  logFile: string
}

/** How a worker ended. */
export interface WorkerExit {
  code: number | null
  signal: string | null
}

/** A started worker. */
export interface WorkerHandle {
  readonly workerId: string
  /** OS process id (process adapter), null where the runtime has none. */
  readonly pid: number | null
  /** Identifies that process's start, so a pid reused by another program is never taken for it. */
  readonly pidMarker: string | null
  /** Resolves once the worker has ended, however it ended. */
  readonly exited: Promise<WorkerExit>
  /** Its stdout and stderr, line by line. */
  readonly logs: WorkerLog
  /** Asks it to end (SIGTERM or the runtime's equivalent), then forces it after `graceMs`. */
  stop(graceMs: number): Promise<void>
}

/**
 * Where workers run: local processes by default; Docker or Kubernetes adapters can stand beside it.
 * Chosen once at start by main.ts.
 */
export interface RuntimeDriver {
  readonly name: string
  /** Starts a worker; rejects with a readable message when it cannot be started at all. */
  start(spec: WorkerSpec): Promise<WorkerHandle>
  /** Stops a worker left running by an earlier run of the control plane, if it is still there; true when it was. */
  reap(ref: { pid: number | null; pidMarker: string | null }): Promise<boolean>
}
