import { spawn } from 'node:child_process'
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { orphanTimeoutMs } from '../../worker/index.js'
import { freePort } from '../freePort.js'
import { resolveImage, type ImagesConfig } from '../images.js'
import { LABELS } from '../labels.js'
import type { ListedWorkload, PublishedPort, RuntimeDriver, RuntimeRef, StartHooks, Workload, WorkloadExit, WorkloadSpec, WorkloadStats } from '../RuntimeDriver.js'
import { WorkerLog } from '../WorkerLog.js'
import { workload } from '../workload.js'
import { OutputTail } from './OutputTail.js'
import { groupUsage, processStartMarker, startTicks } from './procfs.js'
import { probeSandbox, programPaths, SANDBOX_UID, sandboxArgv, unreadableBySandbox, type SandboxBind, type SandboxState } from './sandbox.js'
import { signalWorkload, supervisedArgv } from './supervisor.js'

/** Options of the process driver. */
export interface ProcessDriverOptions {
  /** Work dirs, log files and persistent mounts live under `<dataDir>/workers|pods|persistent`. */
  dataDir: string
  /** Image reference -> local command (beside the built-in sample workers). */
  images: ImagesConfig
  /** Host variables a local process needs (PATH, LANG, ...). */
  hostEnv: Record<string, string>
  /** How often an adopted process (not our child) is checked for life, ms. */
  adoptedPollMs?: number
  /** The sandbox of this machine (see probeSandbox); probed with the defaults when not given. */
  sandbox?: SandboxState
  /** Runs workloads of every account without a sandbox (`runtime.process.trustTenants`). */
  trustTenants?: boolean
  /** Whether an account may run without a sandbox (the admin's); none may when not given. */
  trustedAccount?: (accountId: string) => Promise<boolean>
}

/** What `process:` refs hold. */
interface ProcessRef {
  hostId: string
  pid: number
  marker: string
  kind: WorkloadSpec['kind']
  id: string
}

/** Stored beside a workload so `list` can find it after a restart. */
interface WorkloadFile {
  ref: RuntimeRef
  labels: Record<string, string>
}

/**
 * Workloads as local processes, each under a small supervisor (supervisor.ts) that leads its own process group
 * so that stopping it also stops what it started, and where the machine allows it in a bubblewrap sandbox
 * (sandbox.ts) that sees only the workload's own disk and volume, its program's files and the read-only system;
 * without one, only the admin account's workloads run unless tenants are trusted. An image runs as the command
 * the `images` map gives it (or the spec's entrypoint + cmd). Output goes to a file the process holds itself, so
 * a process outlives a control-plane crash and a restarted control plane adopts it (recognised by the
 * supervisor's pid and start marker, as pids are reused). Stop = SIGTERM to the program's processes (not the
 * supervisor nor bwrap), SIGKILL to the whole group after the grace period. Resources are not limited; mounts and ports are told by env. Every
 * fleet host without an engine of its own runs here: its id only names the workload (and its persistent mounts).
 */
export class ProcessDriver implements RuntimeDriver {
  readonly name = 'process'

  /** What isolates workloads here: bubblewrap, or nothing (and why). */
  readonly sandbox: SandboxState

  constructor(private readonly o: ProcessDriverOptions) {
    this.sandbox = o.sandbox ?? probeSandbox({ sandbox: 'auto', bwrap: 'bwrap', trustTenants: false })
    announceControlPlane(join(o.dataDir, CONTROL_PLANES))
  }

  async start(spec: WorkloadSpec, hooks: StartHooks = {}): Promise<Workload> {
    const dir = this.dirOf(spec.kind, spec.id)
    const disk = join(dir, 'disk')
    const own = [...spec.entrypoint, ...spec.cmd]
    const mapping = resolveImage(spec.image, this.o.images)
    const command = own.length > 0 ? own : mapping?.command
    if (!command) {
      throw new Error(`image ${JSON.stringify(spec.image)} has no local command: set the endpoint's entrypoint/cmd, or map the image in the "images" configuration`)
    }
    const sandbox = this.sandbox.kind === 'bwrap' ? this.sandbox : null
    if (!sandbox) await this.mayRunUnsandboxed(spec, this.sandbox.kind === 'none' ? this.sandbox.reason : '')
    hooks.onPhase?.('CREATING')
    // The container disk is ephemeral: every start begins with an empty one.
    rmSync(disk, { recursive: true, force: true })
    mkdirSync(disk, { recursive: true })
    const ports = await this.allocatePorts(spec)
    const writable: string[] = [disk]
    const env: Record<string, string> = { ...this.o.hostEnv, HOME: disk, ...(own.length > 0 ? {} : (mapping?.env ?? {})), ...spec.env, ...this.runtimeEnv(spec, disk, ports, writable) }
    const logs = new WorkerLog(this.logPath(spec.kind, spec.id))
    logs.append('system', `starting: ${command.map((a) => JSON.stringify(a)).join(' ')}`)
    const outputFile = join(dir, 'output.log')
    const out = openSync(outputFile, 'w')
    let argv = command
    if (sandbox) {
      // Its own /tmp: the host's TMPDIR is not there.
      env.TMPDIR = '/tmp'
      const binds: SandboxBind[] = [...programPaths(mapping, this.o.dataDir).map((path) => ({ path, writable: false })), ...writable.map((path) => ({ path, writable: true }))]
      // As root the program runs as SANDBOX_UID: its writable places are its own.
      if (process.getuid?.() === 0) for (const path of writable) chownSync(path, SANDBOX_UID, SANDBOX_UID)
      argv = sandboxArgv(sandbox.bwrap, binds, disk, command, { gpus: !spec.gpus.virtual && spec.gpus.ids.length > 0 })
      logs.append('system', `sandboxed (bubblewrap): sees ${writable.join(', ')} and, read-only, the program's files and the system`)
      for (const path of unreadableBySandbox(binds)) logs.append('system', `warning: ${path} is not readable by others: the sandboxed program (uid ${SANDBOX_UID}) cannot read it`)
    }
    const orphanLimitS = spec.kind === 'worker' ? Math.ceil(orphanTimeoutMs(env, true, Math.max(100, Number(env.RUNPOD_PING_INTERVAL ?? 10_000) || 10_000)) / 1000) : 0
    const supervised = supervisedArgv({ controlPlanes: join(this.o.dataDir, CONTROL_PLANES), controlPlanePid: process.pid, controlPlaneStart: startTicks(process.pid) ?? '', orphanLimitS, command: argv })
    hooks.onPhase?.('STARTING')
    const child = spawn('/bin/sh', supervised, { cwd: disk, env, detached: true, stdio: ['ignore', out, out] })
    closeSync(out)
    try {
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve)
        child.once('error', reject)
      })
    } catch (err) {
      const message = `cannot start ${JSON.stringify(command[0])}: ${(err as Error).message}`
      logs.append('system', message)
      logs.end()
      throw new Error(message)
    }
    const pid = child.pid!
    // Read now: a process that already ended has no marker, and the ref must still be well-formed.
    const ref = formatRef({ hostId: spec.hostId, pid, marker: processStartMarker(pid) ?? 'gone:0', kind: spec.kind, id: spec.id })
    writeFileSync(join(dir, 'workload.json'), JSON.stringify({ ref, labels: spec.labels } satisfies WorkloadFile))
    const tail = new OutputTail(outputFile, 0, (line) => logs.append('container', line))
    const exited = new Promise<WorkloadExit>((resolve) => {
      child.once('exit', (code, signal) => {
        tail.close()
        logs.append('system', `exited (${signal ? `signal ${signal}` : `code ${code}`})`)
        logs.end()
        resolve({ code, signal })
      })
    })
    return workload(ref, ports, exited, logs, (signal) => signalWorkload(pid, signal))
  }

  async adopt(ref: RuntimeRef): Promise<Workload | null> {
    const r = parseRef(ref)
    if (!r || processStartMarker(r.pid) !== r.marker) return null
    const dir = this.dirOf(r.kind, r.id)
    const outputFile = join(dir, 'output.log')
    if (!existsSync(outputFile)) return null
    const { log: logs, containerBytes } = WorkerLog.resume(this.logPath(r.kind, r.id))
    logs.append('system', 'adopted by a restarted control plane')
    const tail = new OutputTail(outputFile, containerBytes, (line) => logs.append('container', line))
    // Not our child: no exit event, so its life is polled (pid and start marker, as the pid may be reused).
    const exited = new Promise<WorkloadExit>((resolve) => {
      const timer = setInterval(() => {
        if (processStartMarker(r.pid) === r.marker) return
        clearInterval(timer)
        tail.close()
        logs.append('system', 'exited (adopted process: exit status unknown)')
        logs.end()
        resolve({ code: null, signal: null, reason: 'the process ended (its exit status is unknown after a control-plane restart)' })
      }, this.o.adoptedPollMs ?? 100)
    })
    return workload(ref, readPorts(dir), exited, logs, (signal) => signalWorkload(r.pid, signal))
  }

  async stats(ref: RuntimeRef): Promise<WorkloadStats | null> {
    const r = parseRef(ref)
    if (!r || processStartMarker(r.pid) !== r.marker) return null
    const before = groupUsage(r.pid)
    const t0 = performance.now()
    await new Promise((resolve) => setTimeout(resolve, 200))
    const after = groupUsage(r.pid)
    const seconds = (performance.now() - t0) / 1000
    return { cpuPercent: Math.max(0, ((after.cpuSeconds - before.cpuSeconds) / seconds) * 100), memoryBytes: after.rssBytes }
  }

  async remove(ref: RuntimeRef): Promise<void> {
    const r = parseRef(ref)
    if (!r) return
    if (processStartMarker(r.pid) === r.marker) {
      signalWorkload(r.pid, 'SIGKILL')
      const until = Date.now() + 5_000
      while (processStartMarker(r.pid) === r.marker && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const dir = this.dirOf(r.kind, r.id)
    // The log stays (the logs API serves ended workers from it); disk, raw output and identity go.
    for (const f of ['disk', 'output.log', 'workload.json', 'ports.json']) rmSync(join(dir, f), { recursive: true, force: true })
  }

  async removePersistent(hostId: string, name: string): Promise<void> {
    rmSync(this.persistentDir(hostId, name), { recursive: true, force: true })
  }

  async list(labels: Record<string, string>): Promise<ListedWorkload[]> {
    const found: ListedWorkload[] = []
    for (const kind of ['worker', 'pod'] as const) {
      const base = join(this.o.dataDir, `${kind}s`)
      let ids: string[] = []
      try {
        ids = readdirSync(base)
      } catch {
        continue
      }
      for (const id of ids) {
        let file: WorkloadFile
        try {
          file = JSON.parse(readFileSync(join(base, id, 'workload.json'), 'utf8')) as WorkloadFile
        } catch {
          continue
        }
        if (!Object.entries(labels).every(([k, v]) => file.labels[k] === v)) continue
        const r = parseRef(file.ref)
        if (!r) continue
        found.push({ ref: file.ref, labels: file.labels, running: processStartMarker(r.pid) === r.marker })
      }
    }
    return found
  }

  /** Processes need no engine: this machine answers while this code runs. */
  async ping(): Promise<void> {}

  logPath(kind: WorkloadSpec['kind'], id: string): string {
    return join(this.dirOf(kind, id), 'worker.log')
  }

  private dirOf(kind: WorkloadSpec['kind'], id: string): string {
    return join(this.o.dataDir, `${kind}s`, id)
  }

  private persistentDir(hostId: string, name: string): string {
    return join(this.o.dataDir, 'persistent', encodeURIComponent(hostId), encodeURIComponent(name))
  }

  /** A free host port per declared port: a process cannot be remapped, so it is told where to listen. */
  private async allocatePorts(spec: WorkloadSpec): Promise<PublishedPort[]> {
    const ports: PublishedPort[] = []
    for (const p of spec.ports) ports.push({ privatePort: p.port, publicPort: await freePort(), protocol: p.protocol, ip: '127.0.0.1' })
    writeFileSync(join(this.dirOf(spec.kind, spec.id), 'ports.json'), JSON.stringify(ports))
    return ports
  }

  /**
   * Without a sandbox a program reads what the control plane's user reads (its secrets, every account's
   * files): only the admin's workloads run so, unless the operator trusts every tenant. Workloads of no account
   * (the runtime's own tests) run.
   */
  private async mayRunUnsandboxed(spec: WorkloadSpec, reason: string): Promise<void> {
    const account = spec.labels[LABELS.account]
    if (!account || this.o.trustTenants) return
    if (this.o.trustedAccount && (await this.o.trustedAccount(account))) return
    throw new Error(
      `this host runs local processes without a sandbox (${reason}), so only the admin account's ${spec.kind}s run here, not those of account ${account}: ` +
        'install bubblewrap (bwrap) with user namespaces allowed, or set runtime.process.trustTenants to true if every account is trusted',
    )
  }

  /** Variables that tell the process what a container would get by mapping: ports, mounts, GPUs. */
  private runtimeEnv(spec: WorkloadSpec, disk: string, ports: PublishedPort[], writable: string[]): Record<string, string> {
    const env: Record<string, string> = { HANGAR_DISK_PATH: disk }
    for (const p of spec.ports) {
      const host = String(ports.find((x) => x.privatePort === p.port)!.publicPort)
      env[`HANGAR_PORT_${p.port}`] = host
      for (const name of p.env ?? []) env[name] = host
    }
    for (const m of spec.mounts) {
      if (m.kind === 'persistent') {
        const dir = this.persistentDir(spec.hostId, m.name)
        mkdirSync(dir, { recursive: true })
        writable.push(dir)
        env.HANGAR_PERSISTENT_PATH = dir
      } else if (m.kind === 'volume') {
        mkdirSync(m.source, { recursive: true })
        writable.push(m.source)
        env.HANGAR_VOLUME_PATH = m.source
      }
    }
    // Virtual GPUs are not devices: the variable is left alone. No GPU at all hides every device.
    if (!spec.gpus.virtual) env.CUDA_VISIBLE_DEVICES = spec.gpus.ids.join(',')
    return env
  }
}

/** Where the control planes of a data dir announce themselves to the supervisors of its workers. */
const CONTROL_PLANES = 'control-planes'

/**
 * Writes `<dir>/<pid>` holding this process's start ticks, so that supervisors of workers started by an earlier
 * run take this one for their control plane (it adopts them), and removes the files of processes gone.
 */
function announceControlPlane(dir: string): void {
  mkdirSync(dir, { recursive: true })
  for (const name of readdirSync(dir)) {
    let ticks = ''
    try {
      ticks = readFileSync(join(dir, name), 'utf8').trim()
    } catch {
      // removed meanwhile
    }
    if (Number(name) !== process.pid && startTicks(Number(name)) !== ticks) rmSync(join(dir, name), { force: true })
  }
  writeFileSync(join(dir, String(process.pid)), startTicks(process.pid) ?? '')
}

function readPorts(dir: string): PublishedPort[] {
  try {
    return JSON.parse(readFileSync(join(dir, 'ports.json'), 'utf8')) as PublishedPort[]
  } catch {
    return []
  }
}

/** `process:<host>:<pid>:<boot id>:<start ticks>:<kind>:<id>` (host and id URI-encoded). */
function formatRef(r: ProcessRef): RuntimeRef {
  return `process:${encodeURIComponent(r.hostId)}:${r.pid}:${r.marker}:${r.kind}:${encodeURIComponent(r.id)}`
}

function parseRef(ref: RuntimeRef): ProcessRef | null {
  const m = /^process:([^:]+):(\d+):([^:]+:[^:]+):(worker|pod):([^:]+)$/.exec(ref)
  if (!m) return null
  return { hostId: decodeURIComponent(m[1]), pid: Number(m[2]), marker: m[3], kind: m[4] as ProcessRef['kind'], id: decodeURIComponent(m[5]) }
}
