import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import type { Readable, Writable } from 'node:stream'
import {
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { orphanTimeoutMs } from '../../worker/index.js'
import { freePort } from '../freePort.js'
import { resolveImage, type ImagesConfig } from '../images.js'
import { LABELS } from '../labels.js'
import type {
  ListedWorkload,
  PublishedPort,
  RuntimeDriver,
  RuntimeRef,
  StartHooks,
  Workload,
  WorkloadExit,
  WorkloadMount,
  WorkloadSpec,
  WorkloadStats,
} from '../RuntimeDriver.js'
import { WorkerLog } from '../WorkerLog.js'
import { workload } from '../workload.js'
import { OutputTail } from './OutputTail.js'
import { groupMembers, groupUsage, processStartMarker, startTicks } from './procfs.js'
import { type CgroupState, WorkloadCgroup } from './cgroups.js'
import { connectSandbox, readSandboxPid, stopNetwork, wrappedNetwork } from './network.js'
import {
  checkMountTarget,
  FD,
  LAUNCH_ENV,
  probeSandbox,
  programPaths,
  SANDBOX_UID,
  sandboxArgv,
  unreadableBySandbox,
  unsandboxedArgv,
  within,
  workloadEnvScript,
  type SandboxBind,
  type SandboxState,
} from './sandbox.js'
import { signalWorkload, supervisedArgv } from './supervisor.js'

const runFile = promisify(execFile)

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
  /**
   * The launcher as it was before issue 34, for the attack suite's control run only (never configurable): the
   * supervisor gets the workload's env and finds bwrap and setpriv by name, so that the attacks can be seen to work.
   */
  unsafeLaunchWithWorkloadEnv?: boolean
  /**
   * Resource limits: the cgroups workloads are put in (see probeCgroups; none when not given), their process
   * limit, and how often disk sizes are checked. Absent = no limits.
   */
  limits?: { cgroups: CgroupState; pids: number; diskCheckIntervalMs: number }
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
    this.sandbox = o.sandbox ?? probeSandbox({ sandbox: 'auto', bwrap: 'bwrap' })
    announceControlPlane(join(o.dataDir, CONTROL_PLANES))
  }

  async start(spec: WorkloadSpec, hooks: StartHooks = {}): Promise<Workload> {
    const dir = this.dirOf(spec.kind, spec.id)
    const disk = join(dir, 'disk')
    const own = [...spec.entrypoint, ...spec.cmd]
    const mapping = resolveImage(spec.image, this.o.images)
    const command = own.length > 0 ? own : mapping?.command
    if (!command) {
      throw new Error(
        `image ${JSON.stringify(spec.image)} has no local command: set the endpoint's entrypoint/cmd, or map the image in the "images" configuration`,
      )
    }
    const sandbox = this.sandbox.kind === 'bwrap' ? this.sandbox : null
    if (!sandbox) await this.mayRunUnsandboxed(spec, this.sandbox.kind === 'none' ? this.sandbox.reason : '')
    const isolated = sandbox !== null && sandbox.network.mode !== 'host'
    // The members of an instant cluster share one network (their primary's, rank 0), as a cluster's machines
    // share a private network: they reach each other at their cluster addresses and nothing else does.
    const cluster = isolated ? spec.labels[LABELS.cluster] : undefined
    const joins =
      cluster !== undefined && spec.labels[LABELS.clusterRank] !== '0' ? await this.clusterNetwork(cluster) : null
    // As root bwrap makes the network namespace and pasta connects it; as a user pasta makes it around bwrap.
    const rootNetwork = isolated && !joins && process.getuid?.() === 0
    const link = controlPlaneLink(spec)
    const programs = sandbox ? programPaths(mapping, this.o.dataDir) : []
    if (sandbox) checkMounts(spec.mounts, programs)
    hooks.onPhase?.('CREATING')
    // The container disk is ephemeral: every start begins with an empty one.
    rmSync(disk, { recursive: true, force: true })
    mkdirSync(disk, { recursive: true })
    const ports = await this.allocatePorts(spec)
    const mounts = this.placeMounts(spec, disk, sandbox !== null)
    const home = mounts.find((m) => m.path === disk)!.target
    const env: Record<string, string> = {
      ...this.o.hostEnv,
      HOME: home,
      ...(own.length > 0 ? {} : (mapping?.env ?? {})),
      ...spec.env,
      ...runtimeEnv(spec, ports, mounts, disk, isolated),
    }
    // Its own /tmp: the host's TMPDIR is not there.
    if (sandbox) env.TMPDIR = '/tmp'
    // Refuses a variable no process can carry before anything is started.
    const envScript = workloadEnvScript(env)
    const logs = new WorkerLog(this.logPath(spec.kind, spec.id))
    logs.append('system', `starting: ${command.map((a) => JSON.stringify(a)).join(' ')}`)
    const limits = this.o.limits
    const cgroup = limits
      ? WorkloadCgroup.create(limits.cgroups, `${spec.kind}-${spec.id}`, {
          memoryBytes: Math.round(spec.resources.memoryGb * 2 ** 30),
          cpus: spec.resources.vcpus,
          pids: limits.pids,
        })
      : null
    if (cgroup) logs.append('system', `limits: ${describeLimits(spec, limits!.pids)}`)
    const outputFile = join(dir, 'output.log')
    const out = openSync(outputFile, 'w')
    // The variables reach the program as a file on a descriptor, never as the environment of a process outside
    // its sandbox: the file is gone from the disk once the descriptor is open.
    const envFile = join(dir, 'env')
    writeFileSync(envFile, envScript, { mode: 0o600 })
    const envFd = openSync(envFile, 'r')
    rmSync(envFile, { force: true })
    let argv = unsandboxedArgv(command)
    if (sandbox) {
      const binds: SandboxBind[] = [
        ...programs.map((path) => ({ path, writable: false })),
        ...mounts.map((m) => ({ path: m.path, target: m.target, writable: true })),
      ]
      // As root the program runs as SANDBOX_UID: its writable places are its own.
      if (process.getuid?.() === 0) for (const m of mounts) chownSync(m.path, SANDBOX_UID, SANDBOX_UID)
      const launcher = this.o.unsafeLaunchWithWorkloadEnv
        ? { ...sandbox, bwrap: 'bwrap', setpriv: sandbox.setpriv && 'setpriv' }
        : sandbox
      const wrap =
        joins ??
        (isolated && !rootNetwork && sandbox.network.mode !== 'host'
          ? wrappedNetwork(sandbox.network, { hostPorts: link.hostPorts, published: ports })
          : undefined)
      if (joins && ports.length > 0)
        logs.append(
          'system',
          `warning: a cluster member other than rank 0 shares rank 0's network: its ports ${spec.ports.map((p) => p.port).join(', ')} are not published`,
        )
      argv = sandboxArgv(launcher, binds, home, command, { gpus: spec.gpus.virtual ? [] : spec.gpus.ids, wrap })
      logs.append(
        'system',
        `sandboxed (bubblewrap): sees ${mounts.map((m) => m.target).join(', ')} and, read-only, the program's files and the system; network: ${sandbox.network.mode === 'host' ? "the host's" : `its own (${sandbox.network.mode})`}`,
      )
      for (const path of unreadableBySandbox(binds))
        logs.append(
          'system',
          `warning: ${path} is not readable by others: the sandboxed program (uid ${SANDBOX_UID}) cannot read it`,
        )
    }
    // From the worker's env, so bounded: a whole number of seconds the supervisor's shell can compare, at most a day.
    const pingMs = Math.min(
      MAX_ORPHAN_LIMIT_S * 1000,
      Math.max(100, Number(env.RUNPOD_PING_INTERVAL ?? 10_000) || 10_000),
    )
    const orphanLimitS =
      spec.kind === 'worker'
        ? Math.min(MAX_ORPHAN_LIMIT_S, Math.ceil(orphanTimeoutMs(env, true, pingMs) / 1000) || 30)
        : 0
    const networkPidFile = rootNetwork ? join(dir, NETWORK_PID_FILE) : undefined
    const supervised = supervisedArgv({
      controlPlanes: join(this.o.dataDir, CONTROL_PLANES),
      controlPlanePid: process.pid,
      controlPlaneStart: startTicks(process.pid) ?? '',
      orphanLimitS,
      networkPidFile,
      command: argv,
    })
    hooks.onPhase?.('STARTING')
    // Outside the sandbox: /bin/sh by its path, with Hangar's fixed environment, in the workload's own directory.
    const handshake = sandbox ? 'pipe' : 'ignore'
    const launchEnv = this.o.unsafeLaunchWithWorkloadEnv ? { ...LAUNCH_ENV, ...env } : { ...LAUNCH_ENV }
    const child = spawn('/bin/sh', supervised, {
      cwd: sandbox ? dir : disk,
      env: launchEnv,
      detached: true,
      stdio: ['ignore', out, out, handshake, handshake, envFd],
    })
    closeSync(out)
    closeSync(envFd)
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
    // The hand-shake's pipes are socket pairs: once the sandbox ends, a read on them may say ECONNRESET, which
    // means no more than that it ended (its exit is reported by the 'exit' event).
    for (const fd of sandbox ? [FD.info, FD.go] : []) (child.stdio[fd] as Readable).on('error', () => undefined)
    // In a sandbox, once bwrap has made its init and before the go-ahead, so whatever the program starts is
    // inside; without one at once (what it forked in the meantime stays outside).
    const enterCgroup = () => {
      try {
        // A process may fork between the listing and the move: listed again until no new one shows up.
        const moved = new Set<number>()
        for (
          let fresh = groupMembers(pid).map((p) => p.pid);
          cgroup && fresh.length > 0;
          fresh = groupMembers(pid)
            .map((p) => p.pid)
            .filter((p) => !moved.has(p))
        ) {
          cgroup.enter(fresh)
          for (const p of fresh) moved.add(p)
        }
      } catch (err) {
        throw new Error(`cannot put the workload in its cgroup: ${(err as Error).message}`)
      }
    }
    if (!sandbox) {
      try {
        enterCgroup()
      } catch (err) {
        signalWorkload(pid, 'SIGKILL')
        logs.append('system', (err as Error).message)
        throw err
      }
    }
    if (sandbox) {
      try {
        const inside = await readSandboxPid(child.stdio[FD.info] as Readable)
        enterCgroup()
        if (cluster !== undefined && !joins) this.recordClusterNetwork(cluster, inside, pid, false)
        if (isolated && link.elsewhere)
          logs.append(
            'system',
            `warning: the control plane's URL ${link.elsewhere} is not on this host's loopback: the sandbox reaches it only as any outside address`,
          )
        if (rootNetwork && sandbox.network.mode !== 'host')
          await connectSandbox(
            sandbox.network,
            inside,
            { hostPorts: link.hostPorts, hostAddress: link.hostAddress, published: ports },
            networkPidFile!,
            sandbox.setpriv!,
          )
        // Members join only a network that is set up (routes in place): ready once it is, before the go-ahead.
        if (cluster !== undefined && !joins) this.recordClusterNetwork(cluster, inside, pid, true)
        ;(child.stdio[FD.go] as Writable).end('go\n')
      } catch (err) {
        signalWorkload(pid, 'SIGKILL')
        stopNetwork(join(dir, NETWORK_PID_FILE))
        const message = (err as Error).message
        logs.append('system', message)
        throw new Error(message)
      }
    }
    // Read now: a process that already ended has no marker, and the ref must still be well-formed.
    const ref = formatRef({
      hostId: spec.hostId,
      pid,
      marker: processStartMarker(pid) ?? 'gone:0',
      kind: spec.kind,
      id: spec.id,
    })
    writeFileSync(join(dir, 'workload.json'), JSON.stringify({ ref, labels: spec.labels } satisfies WorkloadFile))
    const tail = new OutputTail(outputFile, 0, (line) => logs.append('container', line))
    let overDisk: string | null = null
    const diskWatch = limits
      ? watchDisks(mounts, limits.diskCheckIntervalMs, (what) => {
          overDisk = what
          logs.append('system', `${what}: stopping the workload`)
          signalWorkload(pid, 'SIGKILL')
        })
      : null
    const exited = new Promise<WorkloadExit>((resolve) => {
      child.once('exit', (code, signal) => {
        // A supervisor killed outright (a stop past its grace period) could not end the network itself.
        stopNetwork(join(dir, NETWORK_PID_FILE))
        if (diskWatch) clearInterval(diskWatch)
        tail.close()
        const oom = cgroup?.oomKilled() ?? false
        cgroup?.remove()
        const reason =
          overDisk ??
          (oom
            ? `out of memory: the workload's limit of ${formatGb(spec.resources.memoryGb)} was reached (the kernel killed it)`
            : undefined)
        logs.append('system', `exited (${signal ? `signal ${signal}` : `code ${code}`})${reason ? `: ${reason}` : ''}`)
        logs.end()
        resolve(reason ? { code, signal, reason } : { code, signal })
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
        stopNetwork(join(dir, NETWORK_PID_FILE))
        tail.close()
        logs.append('system', 'exited (adopted process: exit status unknown)')
        logs.end()
        resolve({
          code: null,
          signal: null,
          reason: 'the process ended (its exit status is unknown after a control-plane restart)',
        })
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
    return {
      cpuPercent: Math.max(0, ((after.cpuSeconds - before.cpuSeconds) / seconds) * 100),
      memoryBytes: after.rssBytes,
    }
  }

  async remove(ref: RuntimeRef): Promise<void> {
    const r = parseRef(ref)
    if (!r) return
    if (processStartMarker(r.pid) === r.marker) {
      signalWorkload(r.pid, 'SIGKILL')
      const until = Date.now() + 5_000
      while (processStartMarker(r.pid) === r.marker && Date.now() < until)
        await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const dir = this.dirOf(r.kind, r.id)
    stopNetwork(join(dir, NETWORK_PID_FILE))
    if (this.o.limits) WorkloadCgroup.existing(this.o.limits.cgroups, `${r.kind}-${r.id}`)?.remove()
    // The log stays (the logs API serves ended workers from it); disk, raw output and identity go.
    for (const f of ['disk', 'output.log', 'workload.json', 'ports.json'])
      rmSync(join(dir, f), { recursive: true, force: true })
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
        // No workload of this kind ever ran here (the folder is made at the first start).
        continue
      }
      for (const id of ids) {
        let file: WorkloadFile
        try {
          file = JSON.parse(readFileSync(join(base, id, 'workload.json'), 'utf8')) as WorkloadFile
        } catch {
          // Half written (a start that died before recording it) or removed meanwhile: nothing to list.
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

  /**
   * The argv prefix that puts a cluster member in its primary's network namespace (nsenter, by its path, into the
   * namespaces of the primary's sandbox as recorded when it started). Members start beside their primary: this
   * waits while the primary is being set up (or not yet started, a while), and refuses at once when the primary
   * that recorded itself has ended.
   */
  private async clusterNetwork(cluster: string, waitMs = 30_000): Promise<string[]> {
    const file = join(this.o.dataDir, CLUSTER_NETWORKS, encodeURIComponent(cluster))
    for (const until = Date.now() + waitMs; ; await new Promise((resolve) => setTimeout(resolve, 50))) {
      let r: ClusterNetworkRecord | null = null
      try {
        r = JSON.parse(readFileSync(file, 'utf8')) as ClusterNetworkRecord
      } catch {
        // not recorded yet
      }
      const alive = (pid: number, marker: string) => Number.isInteger(pid) && processStartMarker(pid) === marker
      if (r && !alive(r.supervisor, r.supervisorMarker)) {
        throw new Error("the cluster's primary (rank 0) has ended: its members share its network, so it starts first")
      }
      if (r?.ready && alive(r.pid, r.marker) && alive(r.outer, r.outerMarker)) {
        // As root the network namespace is bwrap's own (its init's); as a user it is pasta's, whose user
        // namespace the outer bwrap is in and whose owner may enter it.
        if (process.getuid?.() === 0) return ['/usr/bin/nsenter', `--net=/proc/${r.pid}/ns/net`, '--']
        return [
          '/usr/bin/nsenter',
          '--preserve-credentials',
          `--user=/proc/${r.outer}/ns/user`,
          `--net=/proc/${r.outer}/ns/net`,
          '--',
        ]
      }
      if (Date.now() > until) {
        throw new Error(
          `the cluster's primary (rank 0) has not run on this host for ${waitMs / 1000} s: its members share its network`,
        )
      }
    }
  }

  /**
   * Records the primary's sandbox for its members: at once (so that they wait for it, or fail when it ends), then
   * `ready` once its network is connected and its routes are in.
   */
  private recordClusterNetwork(cluster: string, init: number, supervisor: number, ready: boolean): void {
    const outer = Number(readFileSync(`/proc/${init}/stat`, 'utf8').split(') ')[1]?.split(' ')[1])
    const dir = join(this.o.dataDir, CLUSTER_NETWORKS)
    mkdirSync(dir, { recursive: true })
    const record: ClusterNetworkRecord = {
      supervisor,
      supervisorMarker: processStartMarker(supervisor) ?? '',
      pid: init,
      marker: processStartMarker(init) ?? '',
      outer,
      outerMarker: processStartMarker(outer) ?? '',
      ready,
    }
    writeFileSync(join(dir, encodeURIComponent(cluster)), JSON.stringify(record))
  }

  /**
   * A free host port per declared port, on the host's loopback. A program with a network of its own listens on
   * its declared port and pasta forwards the host's port there; one sharing the host's network cannot be
   * remapped, so it is told to listen on the host's port.
   */
  private async allocatePorts(spec: WorkloadSpec): Promise<PublishedPort[]> {
    const ports: PublishedPort[] = []
    for (const p of spec.ports)
      ports.push({ privatePort: p.port, publicPort: await freePort(), protocol: p.protocol, ip: '127.0.0.1' })
    writeFileSync(join(this.dirOf(spec.kind, spec.id), 'ports.json'), JSON.stringify(ports))
    return ports
  }

  /**
   * Where each of the workload's directories is, on the host and as the program sees it: in a sandbox at its
   * declared path (the disk at its target, a pod's volume at its `mounts` path, a worker's network volume at
   * /runpod-volume), without one at its host path.
   */
  private placeMounts(spec: WorkloadSpec, disk: string, sandboxed: boolean): PlacedMount[] {
    const placed: PlacedMount[] = []
    for (const m of spec.mounts) {
      let path: string
      if (m.kind === 'disk') path = disk
      else if (m.kind === 'persistent') path = this.persistentDir(spec.hostId, m.name)
      else path = m.source
      mkdirSync(path, { recursive: true })
      placed.push({
        kind: m.kind,
        path,
        target: sandboxed ? m.target : path,
        declared: m.target,
        sizeGb: m.kind === 'volume' ? 0 : m.sizeGb,
      })
    }
    if (!placed.some((m) => m.kind === 'disk'))
      placed.unshift({
        kind: 'disk',
        path: disk,
        target: sandboxed ? '/workspace' : disk,
        declared: '/workspace',
        sizeGb: 0,
      })
    return placed
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
}

/** A workload's directory on the host and where its program sees it. */
interface PlacedMount {
  kind: WorkloadMount['kind']
  path: string
  target: string
  /** Its path in a container (the spec's target), and its size (0: none, or a volume's, not limited here). */
  declared: string
  sizeGb: number
}

/** Variables that tell the process what a container would get by mapping: ports, mounts, GPUs. */
function runtimeEnv(
  spec: WorkloadSpec,
  ports: PublishedPort[],
  mounts: PlacedMount[],
  disk: string,
  isolated: boolean,
): Record<string, string> {
  const env: Record<string, string> = { HANGAR_DISK_PATH: mounts.find((m) => m.path === disk)!.target }
  for (const p of spec.ports) {
    const listen = String(isolated ? p.port : ports.find((x) => x.privatePort === p.port)!.publicPort)
    env[`HANGAR_PORT_${p.port}`] = listen
    for (const name of p.env ?? []) env[name] = listen
  }
  for (const m of mounts) {
    if (m.kind === 'persistent') env.HANGAR_PERSISTENT_PATH = m.target
    else if (m.kind === 'volume') env.HANGAR_VOLUME_PATH = m.target
  }
  // Virtual GPUs are not devices: the variable is left alone. No GPU at all hides every device.
  if (!spec.gpus.virtual) env.CUDA_VISIBLE_DEVICES = spec.gpus.ids.join(',')
  return env
}

/**
 * Mount paths a sandbox can honour (checkMountTarget), none holding or inside a path of the program's files,
 * and none inside another mount but the disk (a network volume or persistent directory keeps what its tenant
 * wrote, links included, from one start to the next).
 */
function checkMounts(mounts: WorkloadMount[], programs: string[]): void {
  for (const m of mounts) {
    const problem = checkMountTarget(m.target)
    if (problem) throw new Error(problem)
    // bwrap (root) would make the program's mount points inside it, following what the tenant left there.
    const covered = programs.find((p) => within(p, m.target) || within(m.target, p))
    if (covered)
      throw new Error(
        `mount path ${m.target} would hold or lie in ${covered}, which the sandbox shows read-only: choose another path`,
      )
    const outer = mounts.find(
      (o) => o !== m && o.kind !== 'disk' && o.target !== m.target && within(m.target, o.target),
    )
    if (outer)
      throw new Error(
        `mount path ${m.target} lies inside ${outer.target}, another mount whose files persist: choose paths that do not nest`,
      )
  }
}

/**
 * How a workload reaches the control plane (a worker's URL): a loopback port, forwarded into its namespace, or
 * an address elsewhere, reached as any outside address.
 */
function controlPlaneLink(spec: WorkloadSpec): { hostPorts: number[]; hostAddress?: string; elsewhere: string | null } {
  const url = parseUrl(spec.labels[LABELS.controlPlane])
  if (!url) return { hostPorts: [], elsewhere: null }
  if (!isLoopback(url.hostname)) return { hostPorts: [], elsewhere: url.origin }
  return {
    hostPorts: [Number(url.port || (url.protocol === 'https:' ? 443 : 80))],
    hostAddress: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    elsewhere: null,
  }
}

function parseUrl(s: string | undefined): URL | null {
  try {
    return s ? new URL(s) : null
  } catch {
    // Not a URL: the caller treats it as no URL given.
    return null
  }
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || /^127\./.test(hostname) || hostname === '[::1]'
}

function formatGb(gb: number): string {
  return gb >= 1 ? `${gb} GiB` : `${Math.round(gb * 1024)} MiB`
}

function describeLimits(spec: WorkloadSpec, pids: number): string {
  const parts = [
    spec.resources.memoryGb > 0 ? `memory ${formatGb(spec.resources.memoryGb)}` : 'memory unlimited',
    spec.resources.vcpus > 0 ? `${spec.resources.vcpus} CPUs` : 'CPU unlimited',
    pids > 0 ? `${pids} processes` : 'processes unlimited',
  ]
  for (const m of spec.mounts) if (m.kind !== 'volume' && m.sizeGb > 0) parts.push(`${m.target} ${formatGb(m.sizeGb)}`)
  return parts.join(', ')
}

/**
 * Measures the container disk and persistent mount of a workload every `intervalMs` (du, by its path, with
 * LAUNCH_ENV: it does not follow links and stays on one filesystem) and calls `over` once one holds more than
 * its size. Network volumes are shared and sized by their own service: not measured here.
 */
function watchDisks(placed: PlacedMount[], intervalMs: number, over: (what: string) => void): NodeJS.Timeout | null {
  const limited = placed
    .filter((m) => m.sizeGb > 0)
    .map((m) => ({ path: m.path, target: m.declared, bytes: m.sizeGb * 2 ** 30 }))
  if (limited.length === 0) return null
  let busy = false
  const timer = setInterval(() => {
    if (busy) return
    busy = true
    void Promise.all(limited.map(async (l) => ({ ...l, used: await diskUsage(l.path) })))
      .then((sizes) => {
        const full = sizes.find((s) => s.used > s.bytes)
        if (!full) return
        clearInterval(timer)
        over(
          `disk limit: ${full.target} holds ${(full.used / 2 ** 20).toFixed(1)} MiB, over its ${(full.bytes / 2 ** 20).toFixed(1)} MiB`,
        )
      })
      .finally(() => {
        busy = false
      })
  }, intervalMs)
  timer.unref()
  return timer
}

async function diskUsage(path: string): Promise<number> {
  try {
    const { stdout } = await runFile('/usr/bin/du', ['-s', '-x', '-B1', '--', path], {
      env: { ...LAUNCH_ENV },
      timeout: 60_000,
    })
    return Number(stdout.split('\t')[0]) || 0
  } catch (err) {
    // du exits 1 when a file vanished while it counted (the program deleting): its total still counts.
    const out = (err as { stdout?: string }).stdout ?? ''
    return Number(out.split('\t')[0]) || 0
  }
}

/** The longest a worker's supervisor waits for a control plane, whatever the worker's env says, seconds. */
const MAX_ORPHAN_LIMIT_S = 86_400

/** What a cluster's primary records of its sandbox: the processes (pid and start marker) and whether it is set up. */
interface ClusterNetworkRecord {
  supervisor: number
  supervisorMarker: string
  pid: number
  marker: string
  outer: number
  outerMarker: string
  ready: boolean
}

/** Where the network namespace of each cluster's primary is recorded (a file per cluster). */
const CLUSTER_NETWORKS = 'cluster-networks'

/** pasta's pid, in a workload's directory. */
const NETWORK_PID_FILE = 'network.pid'

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
    // A workload that publishes no port has no ports.json.
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
  return {
    hostId: decodeURIComponent(m[1]),
    pid: Number(m[2]),
    marker: m[3],
    kind: m[4] as ProcessRef['kind'],
    id: decodeURIComponent(m[5]),
  }
}
