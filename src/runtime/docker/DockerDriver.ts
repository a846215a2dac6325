import { join } from 'node:path'
import type Docker from 'dockerode'
import { messageOf, statusOf } from './engineErrors.js'
import { freePort } from '../freePort.js'
import { LABELS } from '../labels.js'
import type {
  ListedWorkload,
  PublishedPort,
  RuntimeDriver,
  RuntimeRef,
  StartHooks,
  Workload,
  WorkloadExit,
  WorkloadSpec,
  WorkloadStats,
} from '../RuntimeDriver.js'
import { WorkerLog } from '../WorkerLog.js'
import { workload } from '../workload.js'
import { followContainerLogs } from './containerLogs.js'
import { engineClient } from './engineClient.js'
import type { EngineConfig } from './EngineConfig.js'
import { engineKind, type EngineKind } from './engineKind.js'
import { podmanCreate } from './podmanCreate.js'
import { pullImage } from './pullImage.js'
import { sampleImageRef, sampleOf } from './sampleImages.js'

/** Options of the Docker Engine API driver (one per fleet host). */
export interface DockerDriverOptions {
  /** Fleet host whose engine this is; refs and labels carry it. */
  hostId: string
  engine: EngineConfig
  /** Log files live in `<dataDir>/<kind>s/<id>/worker.log`, as with the process driver. */
  dataDir: string
}

/** Capabilities a workload container keeps: Podman's default set (Docker's, less NET_RAW, MKNOD and AUDIT_WRITE). */
export const CONTAINER_CAPABILITIES = [
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]

/**
 * Workloads as containers of a Docker-compatible engine (Docker, or Podman's API service), spoken to over the
 * Engine API. Each container is labelled (installation, kind, id, host, endpoint or pod, release) so a
 * restarted control plane can list, adopt or remove it, and runs with an init process so SIGTERM reaches
 * the program. The container disk is an anonymous volume removed with the container; persistent mounts are
 * named volumes; network volumes are bind mounts of the host path.
 */
export class DockerDriver implements RuntimeDriver {
  readonly name = 'docker'
  private readonly docker: Docker
  private engineKind: Promise<EngineKind> | undefined

  constructor(private readonly o: DockerDriverOptions) {
    this.docker = engineClient(o.engine)
  }

  async ping(): Promise<void> {
    await this.docker.ping()
  }

  async start(spec: WorkloadSpec, hooks: StartHooks = {}): Promise<Workload> {
    // The sample workers (`hangar/echo`) are built on the engine, under `localhost/hangar/...`.
    const sample = sampleOf(spec.image)
    const image = sample ? sampleImageRef(sample) : spec.image
    await pullImage(this.docker, image, spec.pullAuth, hooks)
    hooks.onPhase?.('CREATING')
    const name = `hangar-${spec.kind}-${spec.id}`
    const hostNetwork = this.o.engine.network === 'host'
    const chosen: PublishedPort[] = []
    if (hostNetwork)
      for (const p of spec.ports)
        chosen.push({ privatePort: p.port, publicPort: await freePort(), protocol: p.protocol, ip: '127.0.0.1' })
    const labels: Record<string, string> = {
      ...spec.labels,
      [LABELS.kind]: spec.kind,
      [LABELS.id]: spec.id,
      [LABELS.host]: this.o.hostId,
    }
    if (hostNetwork) labels[LABELS.ports] = JSON.stringify(chosen)
    const logs = new WorkerLog(this.logPath(spec.kind, spec.id))
    logs.append('system', `creating container ${name} from ${image} on host ${this.o.hostId}`)
    let container: Docker.Container
    try {
      container = await this.create(name, {
        Image: image,
        Entrypoint: spec.entrypoint.length > 0 ? spec.entrypoint : undefined,
        Cmd: spec.cmd.length > 0 ? spec.cmd : undefined,
        Env: Object.entries({ ...spec.env, ...this.runtimeEnv(spec, chosen) }).map(([k, v]) => `${k}=${v}`),
        Labels: labels,
        ExposedPorts: hostNetwork ? undefined : Object.fromEntries(spec.ports.map((p) => [`${p.port}/tcp`, {}])),
        Volumes: this.diskTarget(spec) ? { [this.diskTarget(spec)!]: {} } : undefined,
        HostConfig: this.hostConfig(spec),
      })
    } catch (err) {
      const message = `cannot create the container: ${messageOf(err)}`
      logs.append('system', message)
      logs.end()
      throw new Error(message)
    }
    hooks.onPhase?.('STARTING')
    const argv = [...spec.entrypoint, ...spec.cmd]
    logs.append(
      'system',
      `starting: ${argv.length > 0 ? argv.map((a) => JSON.stringify(a)).join(' ') : "the image's own command"}`,
    )
    try {
      await container.start()
    } catch (err) {
      const message = `cannot start the container: ${messageOf(err)}`
      logs.append('system', message)
      logs.end()
      await this.removeContainer(container.id)
      throw new Error(message)
    }
    const ports = hostNetwork ? chosen : publishedPorts(await container.inspect(), spec.ports)
    return this.attach(container, `docker:${encodeURIComponent(this.o.hostId)}:${container.id}`, ports, logs, 0)
  }

  async adopt(ref: RuntimeRef): Promise<Workload | null> {
    const id = this.containerIdOf(ref)
    if (!id) return null
    const container = this.docker.getContainer(id)
    let info: Docker.ContainerInspectInfo
    try {
      info = await container.inspect()
    } catch {
      // No such container (removed), or its engine does not answer: not adoptable either way; the caller
      // treats the workload as gone, and HostMonitor reports an engine that is down.
      return null
    }
    if (!info.State.Running) return null
    const kind = info.Config.Labels[LABELS.kind] === 'pod' ? 'pod' : 'worker'
    const { log: logs, lastContainerTs } = WorkerLog.resume(this.logPath(kind, info.Config.Labels[LABELS.id] ?? id))
    logs.append('system', 'adopted by a restarted control plane')
    const ports = info.Config.Labels[LABELS.ports]
      ? (JSON.parse(info.Config.Labels[LABELS.ports]) as PublishedPort[])
      : publishedPorts(info, null)
    return this.attach(container, ref, ports, logs, lastContainerTs)
  }

  async stats(ref: RuntimeRef): Promise<WorkloadStats | null> {
    const id = this.containerIdOf(ref)
    if (!id) return null
    const container = this.docker.getContainer(id)
    try {
      const a = (await container.stats({ stream: false })) as Docker.ContainerStats
      if (!a.cpu_stats?.cpu_usage) return null
      const t0 = performance.now()
      await new Promise((resolve) => setTimeout(resolve, 200))
      const b = (await container.stats({ stream: false })) as Docker.ContainerStats
      const ns = (performance.now() - t0) * 1e6
      const info = await container.inspect()
      if (!info.State.Running) return null
      return {
        cpuPercent: Math.max(0, ((b.cpu_stats.cpu_usage.total_usage - a.cpu_stats.cpu_usage.total_usage) / ns) * 100),
        memoryBytes: b.memory_stats?.usage ?? 0,
      }
    } catch {
      // The container ended (or its engine went away) between the two samples: no stats, as for one not running.
      return null
    }
  }

  async remove(ref: RuntimeRef): Promise<void> {
    const id = this.containerIdOf(ref)
    if (id) await this.removeContainer(id)
  }

  async removePersistent(hostId: string, name: string): Promise<void> {
    if (hostId !== this.o.hostId) return
    try {
      await this.docker.getVolume(persistentVolume(name)).remove()
    } catch (err) {
      if (statusOf(err) !== 404) throw err
    }
  }

  async list(labels: Record<string, string>): Promise<ListedWorkload[]> {
    const wanted = { ...labels, [LABELS.host]: this.o.hostId }
    const found = await this.docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: Object.entries(wanted).map(([k, v]) => `${k}=${v}`) }),
    })
    return found.map((c) => ({
      ref: `docker:${encodeURIComponent(this.o.hostId)}:${c.Id}`,
      labels: c.Labels,
      running: c.State === 'running',
    }))
  }

  /** Follows a running container: its logs, its end, and stop. */
  private attach(
    container: Docker.Container,
    ref: RuntimeRef,
    ports: PublishedPort[],
    logs: WorkerLog,
    sinceMs: number,
  ): Workload {
    const logsDone = followContainerLogs(container, logs, sinceMs).catch((err: unknown) =>
      logs.append('system', `log stream failed: ${messageOf(err)}`),
    )
    const exited = (async (): Promise<WorkloadExit> => {
      let exit: WorkloadExit
      try {
        const r = (await container.wait()) as { StatusCode: number }
        exit = { code: r.StatusCode, signal: null }
        // Only to tell an OOM kill apart; a container removed right after it ended has no record left to say it.
        const info = await container.inspect().catch(() => null)
        if (info?.State.OOMKilled) exit.reason = `out of memory (OOM killed, code ${r.StatusCode})`
      } catch (err) {
        exit = {
          code: null,
          signal: null,
          reason: `lost contact with the container engine of host ${this.o.hostId} (${messageOf(err)})`,
        }
      }
      // The log stream ends with the container; do not wait long for a broken one.
      await Promise.race([logsDone, new Promise((resolve) => setTimeout(resolve, 2_000).unref())])
      logs.append('system', `exited (${exit.reason ?? `code ${exit.code}`})`)
      logs.end()
      return exit
    })()
    // The container's init forwards SIGTERM to the program; SIGKILL ends the whole container. A container that
    // ended already refuses a kill (409): there is nothing left to end, and `exited` reports its end.
    return workload(ref, ports, exited, logs, (signal) => container.kill({ signal }).catch(() => undefined))
  }

  /** Creates a container; one left by an earlier start of the same workload (holding the name) is replaced. */
  private async create(name: string, options: Docker.ContainerCreateOptions): Promise<Docker.Container> {
    try {
      return await this.createOnce(name, options)
    } catch (err) {
      // Docker answers 409; Podman 500 with "already in use".
      if (statusOf(err) !== 409 && !/already in use/.test(messageOf(err))) throw err
      await this.removeContainer(name)
      return await this.createOnce(name, options)
    }
  }

  /**
   * A container with GPUs has them or is not made: Podman gets them as CDI devices through its own API (its
   * Docker-compatible one drops DeviceRequests; an unknown CDI device then fails the start); on Docker the
   * request must still be there after create.
   */
  private async createOnce(name: string, options: Docker.ContainerCreateOptions): Promise<Docker.Container> {
    const requests = options.HostConfig?.DeviceRequests ?? []
    if (requests.length === 0) return this.docker.createContainer({ name, ...options })
    this.engineKind ??= engineKind(this.docker).catch((err: unknown) => {
      this.engineKind = undefined
      throw err
    })
    if ((await this.engineKind).kind === 'podman') {
      const cdi = requests.flatMap((r) =>
        r.Driver === 'cdi'
          ? (r.DeviceIDs ?? [])
          : (r.DeviceIDs ?? []).map((id) => `${this.o.engine.cdiKind ?? 'nvidia.com/gpu'}=${id}`),
      )
      const { DeviceRequests: _dropped, ...hostConfig } = options.HostConfig!
      return podmanCreate(this.docker, name, { ...options, HostConfig: hostConfig }, cdi)
    }
    const container = await this.docker.createContainer({ name, ...options })
    const info = await container.inspect()
    if (!info.HostConfig.DeviceRequests?.length) {
      await this.removeContainer(container.id)
      throw new Error(
        `the engine dropped the GPU request (HostConfig.DeviceRequests is empty after create), so the container would run without its GPUs ${requests.flatMap((r) => r.DeviceIDs ?? []).join(', ')}`,
      )
    }
    return container
  }

  private hostConfig(spec: WorkloadSpec): Docker.HostConfig {
    const e = this.o.engine
    const hc: Docker.HostConfig = {
      Init: true,
      // Tenants' programs: never privileged, in their own PID namespace, with the usual capabilities and no
      // more (CapDrop ALL, then the engines' usual default set without NET_RAW, MKNOD and AUDIT_WRITE); the
      // only host paths they see are their network volume's (Binds) and their own persistent volume.
      Privileged: false,
      CapDrop: ['ALL'],
      CapAdd: CONTAINER_CAPABILITIES,
      NetworkMode: e.network === 'host' ? 'host' : undefined,
      PortBindings:
        e.network === 'host'
          ? undefined
          : Object.fromEntries(spec.ports.map((p) => [`${p.port}/tcp`, [{ HostIp: '', HostPort: '' }]])),
      CgroupParent: e.cgroupParent,
      Memory: spec.resources.memoryGb > 0 ? Math.round(spec.resources.memoryGb * 1024 ** 3) : undefined,
      NanoCpus: spec.resources.vcpus > 0 ? Math.round(spec.resources.vcpus * 1e9) : undefined,
      Binds: spec.mounts.flatMap((m) => (m.kind === 'volume' ? [`${m.source}:${m.target}`] : [])),
      Mounts: spec.mounts.flatMap((m) =>
        m.kind === 'persistent'
          ? [{ Type: 'volume' as const, Source: persistentVolume(m.name), Target: m.target }]
          : [],
      ),
    }
    if (!spec.gpus.virtual && spec.gpus.ids.length > 0) {
      // Docker with the NVIDIA toolkit takes device ids; CDI-capable engines take fully qualified CDI names.
      if (e.gpus === 'nvidia')
        hc.DeviceRequests = [{ Driver: 'nvidia', DeviceIDs: spec.gpus.ids, Capabilities: [['gpu']] }]
      else if (e.gpus === 'cdi')
        hc.DeviceRequests = [
          { Driver: 'cdi', DeviceIDs: spec.gpus.ids.map((id) => `${e.cdiKind ?? 'nvidia.com/gpu'}=${id}`) },
        ]
      else
        throw new Error(
          `it needs GPUs ${spec.gpus.ids.join(', ')} of host ${this.o.hostId}, whose engine passes none ("gpus": "none"); set "gpus" to "nvidia" or "cdi", or mark the host's GPUs virtual`,
        )
    }
    return hc
  }

  /** Mount paths and ports as the program sees them inside the container. */
  private runtimeEnv(spec: WorkloadSpec, chosen: PublishedPort[]): Record<string, string> {
    const env: Record<string, string> = {}
    const disk = this.diskTarget(spec)
    if (disk) env.HANGAR_DISK_PATH = disk
    for (const m of spec.mounts) {
      if (m.kind === 'persistent') env.HANGAR_PERSISTENT_PATH = m.target
      else if (m.kind === 'volume') env.HANGAR_VOLUME_PATH = m.target
    }
    for (const p of spec.ports) {
      // With host networking the program listens on the chosen port; in a bridge, on its own (mapped) port.
      const listen = String(chosen.find((c) => c.privatePort === p.port)?.publicPort ?? p.port)
      env[`HANGAR_PORT_${p.port}`] = listen
      for (const name of p.env ?? []) env[name] = listen
    }
    return env
  }

  /** Where the container disk goes, unless another mount takes that path. */
  private diskTarget(spec: WorkloadSpec): string | null {
    const disk = spec.mounts.find((m) => m.kind === 'disk')
    if (!disk || spec.mounts.some((m) => m.kind !== 'disk' && m.target === disk.target)) return null
    return disk.target
  }

  logPath(kind: WorkloadSpec['kind'], id: string): string {
    return join(this.o.dataDir, `${kind}s`, id, 'worker.log')
  }

  private containerIdOf(ref: RuntimeRef): string | null {
    const m = /^docker:([^:]+):([0-9a-f]+)$/.exec(ref)
    return m && decodeURIComponent(m[1]) === this.o.hostId ? m[2] : null
  }

  private async removeContainer(idOrName: string): Promise<void> {
    try {
      await this.docker.getContainer(idOrName).remove({ force: true, v: true })
    } catch (err) {
      const status = statusOf(err)
      // Gone already, or being removed by an earlier call.
      if (status !== 404 && status !== 409) throw err
    }
  }
}

function persistentVolume(name: string): string {
  return `hangar-persistent-${name.replace(/[^a-zA-Z0-9_.-]/g, '_')}`
}

/** Ports the engine published, from an inspect; `declared` limits them to the spec's ports. */
function publishedPorts(info: Docker.ContainerInspectInfo, declared: WorkloadSpec['ports'] | null): PublishedPort[] {
  const out: PublishedPort[] = []
  for (const [key, bindings] of Object.entries(info.NetworkSettings?.Ports ?? {})) {
    const privatePort = Number(key.split('/')[0])
    const binding = bindings?.[0]
    if (!binding) continue
    const protocol = declared?.find((p) => p.port === privatePort)?.protocol ?? 'tcp'
    if (declared && !declared.some((p) => p.port === privatePort)) continue
    out.push({
      privatePort,
      publicPort: Number(binding.HostPort),
      protocol,
      ip: binding.HostIp && binding.HostIp !== '0.0.0.0' ? binding.HostIp : '127.0.0.1',
    })
  }
  return out
}
