import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type {
  ListedWorkload,
  RuntimeDriver,
  RuntimeRef,
  StartHooks,
  Workload,
  WorkloadExit,
  WorkloadSpec,
  WorkloadStats,
} from '../../src/runtime/RuntimeDriver.js'
import { WorkerLog } from '../../src/runtime/WorkerLog.js'

/** Where the simulated workers run: in this process (tests), or in another one the bench drives over IPC. */
export interface VirtualHostFleet {
  /** Starts a virtual worker from the workload's env; `onExit` once it has ended on its own. */
  start(id: string, env: Record<string, string>, onExit: () => void): void
  /** Ends it because the runtime stopped or removed it. */
  end(id: string): void
  /** Ends it as a lost host would (churn): its running job is abandoned. */
  stop(id: string): void
}

/** Options of a simulated runtime. */
export interface SimulatedRuntimeOptions {
  fleet: VirtualHostFleet
  /**
   * Awaited before a start hands the workload to the fleet: an image pull, a Pod pending (a test makes one
   * endpoint's starts never finish). Given the start's signal, which aborts when Hangar calls the start off.
   */
  beforeStart?: (spec: WorkloadSpec, signal?: AbortSignal) => Promise<void>
  /** Awaited before `remove` ends a workload (a slow engine). */
  beforeRemove?: (ref: RuntimeRef) => Promise<void>
  /** Awaited before a workload's `stop` ends it; a rejection fails that stop (a Pod DELETE the API server reset). */
  beforeStop?: (ref: RuntimeRef) => Promise<void>
}

interface Running {
  spec: WorkloadSpec
  exited: Promise<WorkloadExit>
  end: (exit: WorkloadExit) => void
  logs: WorkerLog
}

/**
 * A RuntimeDriver for tests and the fleet bench: workloads are virtual workers (bench/fleet/VirtualWorkers.ts)
 * on virtual hosts, started from the env Hangar gives each workload, so the control plane alone is measured.
 * Refs are `sim:<host>:<id>`. Nothing survives a restart (adopt finds nothing).
 */
export class SimulatedRuntime implements RuntimeDriver {
  readonly name = 'sim'
  private readonly running = new Map<RuntimeRef, Running>()
  /** Starts begun, and how many are in the runtime's hands now (waiting in `beforeStart`). */
  readonly starts = { begun: 0, pending: 0, peakPending: 0 }
  private readonly logDir = join(tmpdir(), 'hangar-sim-logs')

  constructor(private readonly opts: SimulatedRuntimeOptions) {}

  async start(spec: WorkloadSpec, hooks?: StartHooks): Promise<Workload> {
    this.starts.begun++
    this.starts.pending++
    this.starts.peakPending = Math.max(this.starts.peakPending, this.starts.pending)
    try {
      hooks?.onPhase?.('STARTING')
      await this.opts.beforeStart?.(spec, hooks?.signal)
      if (hooks?.signal?.aborted) throw new Error('the start was called off')
    } finally {
      this.starts.pending--
    }
    const ref = `sim:${encodeURIComponent(spec.hostId)}:${spec.id}`
    let end!: (exit: WorkloadExit) => void
    const exited = new Promise<WorkloadExit>((resolve) => (end = resolve))
    const logs = new WorkerLog(null)
    const entry: Running = { spec, exited, end, logs }
    this.running.set(ref, entry)
    void exited.then(() => {
      logs.end()
      this.running.delete(ref)
    })
    this.opts.fleet.start(spec.id, spec.env, () => end({ code: 0, signal: null }))
    return {
      ref,
      ports: [],
      exited,
      logs,
      stop: async () => {
        await this.opts.beforeStop?.(ref)
        this.opts.fleet.end(spec.id)
        end({ code: null, signal: 'SIGTERM' })
        await exited
      },
    }
  }

  async adopt(): Promise<Workload | null> {
    return null
  }

  async stats(ref: RuntimeRef): Promise<WorkloadStats | null> {
    return this.running.has(ref) ? { cpuPercent: 0, memoryBytes: 0 } : null
  }

  async remove(ref: RuntimeRef): Promise<void> {
    await this.opts.beforeRemove?.(ref)
    const r = this.running.get(ref)
    if (!r) return
    this.opts.fleet.end(r.spec.id)
    r.end({ code: null, signal: 'SIGKILL' })
    await r.exited
  }

  async removePersistent(): Promise<void> {}

  async list(labels: Record<string, string>): Promise<ListedWorkload[]> {
    const out: ListedWorkload[] = []
    for (const [ref, r] of this.running) {
      if (Object.entries(labels).every(([k, v]) => r.spec.labels[k] === v))
        out.push({ ref, labels: r.spec.labels, running: true })
    }
    return out
  }

  async ping(): Promise<void> {}

  logPath(kind: WorkloadSpec['kind'], id: string): string {
    return join(this.logDir, kind, `${id}.log`)
  }

  /** Workloads running now. */
  get size(): number {
    return this.running.size
  }

  /** Ends the workload of worker `id` as a lost machine would (churn). */
  lose(workerId: string): boolean {
    for (const r of this.running.values()) {
      if (r.spec.id !== workerId) continue
      this.opts.fleet.stop(workerId)
      r.end({ code: null, signal: 'SIGKILL', reason: 'LOST: the simulated host went away' })
      return true
    }
    return false
  }
}
