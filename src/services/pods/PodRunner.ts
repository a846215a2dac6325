import { mkdirSync, rmdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Allocation } from '../../catalog/Fleet.js'
import type { PodRecord } from '../../domain/pods/pod.js'
import type { LogLine } from '../../runtime/WorkerLog.js'
import { WorkerLog } from '../../runtime/WorkerLog.js'
import type { Log } from '../log.js'
import type { RuntimeDriver, Workload, WorkloadExit, WorkloadSpec, WorkloadStats } from '../../runtime/RuntimeDriver.js'
import { LABELS } from '../../runtime/labels.js'
import { persistentName, podWorkload } from './podWorkload.js'

/** What the runner needs. */
export interface PodRunnerDeps {
  runtime: RuntimeDriver
  /** Pod logs live in `<dataDir>/pod-logs/<podId>.log`. */
  dataDir: string
  log: Log
  stopGraceMs: number
  /** This installation's id (labels), so orphans of another installation on a shared engine are left alone. */
  installationId: string
  /** Registry credentials to pull a private image (`pullAuth`), opened only when a pod starts. */
  pullAuth?: (pod: PodRecord) => Promise<WorkloadSpec['pullAuth']>
}

/** A program that ended without being asked to: what the service turns into EXITED or ERROR. */
export type UnplannedExit = (podId: string, exit: WorkloadExit) => void

/** How often a running pod's resource use is sampled, ms. */
const SAMPLE_EVERY_MS = 2_000

interface Running {
  workload: Workload
  sampler: NodeJS.Timeout
  /** Set before Hangar itself stops the program, so its end is not taken for a crash. */
  intentional: boolean
  unpipe: () => void
}

/**
 * The runtime side of pods: starting, stopping, adopting and removing their programs through the
 * RuntimeDriver, and each pod's log (one per pod, across all its starts: the program's `container`
 * lines and Hangar's `system` notes about its lifecycle). Status is the service's business.
 */
export class PodRunner {
  private readonly running = new Map<string, Running>()
  private readonly logs = new Map<string, WorkerLog>()
  /** The latest resource sample of each running program (taken in the background: a sample takes a moment). */
  private readonly stats = new Map<string, WorkloadStats>()

  constructor(
    private readonly deps: PodRunnerDeps,
    private readonly unplanned: UnplannedExit,
  ) {}

  /** The pod's log (live, or read back from its file after a restart). */
  logOf(podId: string): WorkerLog {
    let log = this.logs.get(podId)
    if (!log) {
      const file = this.logFile(podId)
      mkdirSync(join(this.deps.dataDir, 'pod-logs'), { recursive: true })
      log = WorkerLog.resume(file).log
      this.logs.set(podId, log)
    }
    return log
  }

  /** Adds a `system` line to the pod's log. */
  note(podId: string, line: string): void {
    this.logOf(podId).append('system', line)
  }

  /**
   * Starts the pod's program on `allocation`. Resolves with the workload, or rejects with a readable reason
   * (also written to the pod's log) when it cannot be started.
   */
  async start(pod: PodRecord, allocation: Allocation, volumePath: string | null): Promise<Workload> {
    const spec = podWorkload(pod, allocation, volumePath, this.deps.installationId)
    spec.pullAuth = (await this.deps.pullAuth?.(pod)) ?? null
    let workload: Workload
    try {
      workload = await this.deps.runtime.start(spec)
    } catch (err) {
      const reason = `the program could not be started: ${(err as Error).message}`
      this.note(pod.id, reason)
      throw new Error(reason)
    }
    this.attach(pod.id, workload, true)
    return workload
  }

  /** Re-attaches to a program left by an earlier run of the control plane; null when it is gone. */
  async adopt(podId: string, ref: string): Promise<Workload | null> {
    const workload = await this.deps.runtime.adopt(ref)
    if (workload) this.attach(podId, workload, false)
    return workload
  }

  /** True when a program of the pod runs (started or adopted by this control plane). */
  isRunning(podId: string): boolean {
    return this.running.has(podId)
  }

  /**
   * Stops the pod's program (SIGTERM, then forced after the grace period) and deletes it with its container
   * disk; the persistent mount stays. A no-op when nothing runs.
   */
  async stop(podId: string, ref: string | null, graceMs = this.deps.stopGraceMs): Promise<void> {
    const r = this.running.get(podId)
    if (r) {
      r.intentional = true
      await r.workload.stop(graceMs)
      r.unpipe()
      clearInterval(r.sampler)
      this.running.delete(podId)
    }
    this.stats.delete(podId)
    if (ref) await this.deps.runtime.remove(ref)
  }

  /** Deletes the persistent mount of a pod being terminated (a no-op for a pod without one). */
  async destroyMount(pod: PodRecord): Promise<void> {
    if (pod.mounts.persistent && pod.placement)
      await this.deps.runtime.removePersistent(pod.placement.hostId, persistentName(pod.id))
  }

  /**
   * Drops what remains of a terminated pod: its log (ended, so its followers stop) and its files, this log's and
   * the runtime's copy of the program's output with the folder it was in. Nothing of the pod is kept after it.
   */
  forget(podId: string): void {
    this.logs.get(podId)?.end()
    this.logs.delete(podId)
    rmSync(this.logFile(podId), { force: true })
    const runtimeLog = this.deps.runtime.logPath('pod', podId)
    rmSync(runtimeLog, { force: true })
    try {
      rmdirSync(dirname(runtimeLog))
    } catch {
      // Gone already, or something else is still in it: left alone.
    }
  }

  /** What this runner still holds for a pod (`program`, `log`, `sample`); none once the pod is terminated. */
  heldFor(podId: string): string[] {
    return [
      this.running.has(podId) && 'program',
      this.logs.has(podId) && 'log',
      this.stats.has(podId) && 'sample',
    ].filter((x) => x !== false)
  }

  /** The latest resource use of the pod's program (sampled every few seconds), null before the first sample. */
  usage(podId: string): WorkloadStats | null {
    return this.stats.get(podId) ?? null
  }

  /** Stops every pod program this control plane would leave behind: none (pods outlive the control plane). */
  detachAll(): void {
    for (const r of this.running.values()) {
      r.unpipe()
      clearInterval(r.sampler)
    }
    this.running.clear()
  }

  /** Pod programs the runtime runs that no pod claims (`known` = refs of pods that should run); removes them. */
  async removeOrphans(known: ReadonlySet<string>): Promise<string[]> {
    const removed: string[] = []
    for (const w of await this.deps.runtime.list({
      [LABELS.installation]: this.deps.installationId,
      [LABELS.kind]: 'pod',
    })) {
      if (known.has(w.ref)) continue
      await this.deps.runtime.remove(w.ref)
      removed.push(w.ref)
      this.deps.log.warn({ ref: w.ref, podId: w.labels[LABELS.pod] }, 'orphaned pod program removed')
    }
    return removed
  }

  private attach(podId: string, workload: Workload, copyHistory: boolean): void {
    const log = this.logOf(podId)
    // A fresh start's log holds only this start; an adopted one also holds what the pod log already has.
    if (copyHistory) for (const l of workload.logs.history()) log.append(l.source, l.line)
    const unpipe = workload.logs.onLine((l: LogLine) => log.append(l.source, l.line))
    const sample = () =>
      void this.deps.runtime.stats(workload.ref).then(
        (v) => this.running.get(podId) === r && v && this.stats.set(podId, v),
        () => {},
      )
    const r: Running = { workload, intentional: false, unpipe, sampler: setInterval(sample, SAMPLE_EVERY_MS).unref() }
    this.running.set(podId, r)
    sample()
    void workload.exited.then((exit) => {
      clearInterval(r.sampler)
      if (this.running.get(podId) !== r || r.intentional) return
      r.unpipe()
      this.running.delete(podId)
      this.stats.delete(podId)
      this.unplanned(podId, exit)
    })
  }

  private logFile(podId: string): string {
    return join(this.deps.dataDir, 'pod-logs', `${podId}.log`)
  }
}
