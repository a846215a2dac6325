import type { WorkerLog } from './WorkerLog.js'

/**
 * Opaque id of something a runtime runs, stable across control-plane restarts:
 * `process:<host>:<pid>:<marker>`, `docker:<host>:<containerId>`. Only the driver that made it reads it.
 */
export type RuntimeRef = string

/** Where storage appears inside a workload. Targets a runtime cannot honour are told by env (see WorkloadSpec.env). */
export type WorkloadMount =
  /** Container disk: empty on every start, removed with the workload. */
  | { kind: 'disk'; target: string; sizeGb: number }
  /** Survives stop/start of the same pod; removed by `removePersistent`. */
  | { kind: 'persistent'; name: string; target: string; sizeGb: number }
  /** A network volume: a directory of the host, shared. */
  | { kind: 'volume'; source: string; target: string }

/** A port the program listens on. */
export interface WorkloadPort {
  port: number
  protocol: 'http' | 'tcp'
  /**
   * Env names set to the port the program must actually listen on (e.g. `PORT`), for runtimes that cannot remap
   * ports (local processes, host-network containers). `HANGAR_PORT_<port>` is always set.
   */
  env?: string[]
}

/** What to run: an image with its command, env, resources, storage and ports. */
export interface WorkloadSpec {
  /** Worker id or pod id (names, labels, log and disk locations). */
  id: string
  kind: 'worker' | 'pod'
  /** Fleet host chosen by placement. */
  hostId: string
  /** Kept on the workload and given back by `list` (endpoint/pod id, account, release, ...). */
  labels: Record<string, string>
  image: string
  /** Empty = the image's own. */
  entrypoint: string[]
  /** Empty = the image's own. */
  cmd: string[]
  /**
   * The program's variables. The driver adds `HANGAR_PORT_<port>` and port env names, and the mount paths
   * as `HANGAR_DISK_PATH`, `HANGAR_PERSISTENT_PATH`, `HANGAR_VOLUME_PATH` (host paths for a process, the
   * targets in a container).
   */
  env: Record<string, string>
  /** Device ids on the host (CUDA_VISIBLE_DEVICES for a process); `virtual` GPUs are not passed through. */
  gpus: { ids: string[]; virtual: boolean }
  /** Limits where the runtime enforces them (containers); 0 = no limit. */
  resources: { vcpus: number; memoryGb: number }
  mounts: WorkloadMount[]
  ports: WorkloadPort[]
  /** Registry credentials for pulling `image`, if it is private. */
  pullAuth?: { username: string; password: string; server: string } | null
}

/** A port as reachable from outside the workload. */
export interface PublishedPort {
  privatePort: number
  publicPort: number
  protocol: 'http' | 'tcp'
  ip: string
}

/** How a workload ended; `reason` says why when the runtime knows better than an exit code (OOM, lost). */
export interface WorkloadExit {
  code: number | null
  signal: string | null
  reason?: string
}

/** A started (or adopted) workload. */
export interface Workload {
  readonly ref: RuntimeRef
  readonly ports: PublishedPort[]
  /** Resolves once it has ended, however it ended, after its last output is in `logs`. */
  readonly exited: Promise<WorkloadExit>
  /** Its output (`container`) and the driver's notes (`system`), line by line. */
  readonly logs: WorkerLog
  /** Asks it to end (SIGTERM), then forces it after `graceMs`; resolves once it has ended. Keeps its disk. */
  stop(graceMs: number): Promise<void>
}

/** Steps of a start, for the workers view; `PULLING` comes with `{ bytes, totalBytes }` as known. */
export type StartPhase = 'PULLING' | 'CREATING' | 'STARTING'

/** Callbacks during `start`. */
export interface StartHooks {
  onPhase?(phase: StartPhase, detail?: { bytes?: number; totalBytes?: number }): void
  /**
   * Why the start waits on the runtime (`NO_CAPACITY: <scheduler's message>`: a cluster that cannot place it
   * yet), or null once it no longer waits.
   */
  onWaiting?(why: string | null): void
  /** Calls the start off (the workload was stopped before it ran); runtimes whose starts can wait long honour it. */
  signal?: AbortSignal
}

/** Resource use of a running workload. */
export interface WorkloadStats {
  /** Percent of one CPU (200 = two CPUs busy). */
  cpuPercent: number
  memoryBytes: number
  gpuPercent?: number
}

/** A workload found by `list`. */
export interface ListedWorkload {
  ref: RuntimeRef
  labels: Record<string, string>
  running: boolean
}

/**
 * Where workloads run: local processes by default, containers through a Docker-compatible engine beside it.
 * Chosen by main.ts from the configuration. Services hold only `RuntimeRef`s: pids, container ids and host
 * paths stay inside the adapter.
 */
export interface RuntimeDriver {
  /** `process`, `docker`: shown in the workers view. */
  readonly name: string
  /**
   * Starts a workload; rejects with a readable message when it cannot be started at all (a failed pull
   * rejects with `IMAGE_PULL_FAILED: <reason>`).
   */
  start(spec: WorkloadSpec, hooks?: StartHooks): Promise<Workload>
  /** Re-attaches to a workload left by an earlier run of the control plane; null when it no longer runs. */
  adopt(ref: RuntimeRef): Promise<Workload | null>
  /** Resource use now, or null when it no longer runs. */
  stats(ref: RuntimeRef): Promise<WorkloadStats | null>
  /** Stops it if it runs (no grace), then deletes it and its container disk. Unknown refs are ignored. */
  remove(ref: RuntimeRef): Promise<void>
  /** Deletes a persistent mount of a host (a pod's volume). */
  removePersistent(hostId: string, name: string): Promise<void>
  /** Workloads whose labels include all of `labels`, running or not (for re-adoption and clean-up). */
  list(labels: Record<string, string>): Promise<ListedWorkload[]>
  /** Resolves when the runtime of `hostId` answers; rejects saying why not (an engine that stopped answering). */
  ping(hostId: string): Promise<void>
  /**
   * The file the log of workload `id` (its output and the driver's notes, as `Workload.logs` holds them) is
   * written to, on the control plane's disk; it stays after the workload is removed, for reading back.
   */
  logPath(kind: WorkloadSpec['kind'], id: string): string
  /** Why `ref` is not adopted when its host now runs another runtime (processes before, an engine now); else null. */
  switched?(ref: RuntimeRef): string | null
  /**
   * Starts at once on one of this driver's hosts, where its hosts are not single machines (a Kubernetes host is
   * every Node of one GPU model); the fleet's per-host bound when unset.
   */
  readonly hostStartLimit?: number
}

/** Thrown by `start` when the image cannot be pulled; `message` is `IMAGE_PULL_FAILED: <reason>`. */
export class ImagePullError extends Error {
  constructor(readonly reason: string) {
    super(`IMAGE_PULL_FAILED: ${reason}`)
    this.name = 'ImagePullError'
  }
}
