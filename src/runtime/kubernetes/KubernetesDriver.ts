import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { CoreV1Api, Log, VersionApi, type KubeConfig, type V1Pod } from '@kubernetes/client-node'
import { freePort } from '../freePort.js'
import { LABELS } from '../labels.js'
import {
  ImagePullError,
  type ListedWorkload,
  type PublishedPort,
  type RuntimeDriver,
  type RuntimeRef,
  type StartHooks,
  type Workload,
  type WorkloadExit,
  type WorkloadSpec,
  type WorkloadStats,
} from '../RuntimeDriver.js'
import { lineSplitter, WorkerLog } from '../WorkerLog.js'
import { kubeConfigOf, kubeMessageOf, kubeStatusOf } from './kubeClient.js'
import type { KubernetesConfig } from './KubernetesConfig.js'
import {
  CONTAINER,
  dnsName,
  isLabel,
  LABELS_ANNOTATION,
  persistentClaim,
  POD_NAME_LABEL,
  podManifest,
  PORTS_ANNOTATION,
  shortHash,
  volumeClaim,
} from './podManifest.js'
import { MANAGED_BY, PodWatch } from './PodWatch.js'

/** Options of the Kubernetes driver (one for the whole cluster, whatever fleet hosts stand for it). */
export interface KubernetesDriverOptions {
  config: KubernetesConfig
  /** Log files live in `<dataDir>/<kind>s/<id>/worker.log`, as with the other drivers. */
  dataDir: string
  /** The node selector of each fleet host (its GPU type label); hosts without one are scheduled anywhere. */
  hostSelectors?: ReadonlyMap<string, Record<string, string>>
  /** Client settings; from `config` when not given. */
  kubeConfig?: KubeConfig
}

/** Label of cluster members: the selector of their headless Service. */
const CLUSTER_LABEL = 'hangar.io/cluster'
/** Container waiting reasons that mean the image cannot be had. */
const PULL_FAILURES = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'RegistryUnavailable',
])
/** Container waiting reasons that mean it cannot be created or started at all. */
const CREATE_FAILURES = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError'])

/**
 * Workloads as Kubernetes Pods (never Deployments: Hangar's autoscaler decides how many run). Each Pod is
 * labelled like the other drivers' containers (installation, kind, id, host, endpoint or pod, release; values a
 * label cannot hold are in an annotation), so a restarted control plane lists and adopts them by label. Status
 * comes from one watch of the namespace; output from the log endpoint (follow); stop is a delete with the
 * grace period. The container disk is an emptyDir with a size limit, a pod's persistent volume a
 * ReadWriteOnce claim, a network volume a ReadWriteMany claim (or its host directory, see `networkVolumes`).
 */
export class KubernetesDriver implements RuntimeDriver {
  readonly name = 'kubernetes'
  readonly kc: KubeConfig
  readonly api: CoreV1Api
  private readonly watch: PodWatch
  private readonly ns: string

  constructor(private readonly o: KubernetesDriverOptions) {
    this.kc = o.kubeConfig ?? kubeConfigOf(o.config)
    this.api = this.kc.makeApiClient(CoreV1Api)
    this.ns = o.config.namespace
    this.watch = new PodWatch(this.kc, this.api, this.ns)
  }

  async ping(): Promise<void> {
    await this.kc.makeApiClient(VersionApi).getCode()
  }

  /** Ends the shared watch (the control plane is shutting down; Pods keep running). */
  async close(): Promise<void> {
    await this.watch.stop()
  }

  async start(spec: WorkloadSpec, hooks: StartHooks = {}): Promise<Workload> {
    await this.watch.ready()
    hooks.onPhase?.('CREATING')
    const c = this.o.config
    const name = `hangar-${spec.kind}-${dnsName(spec.id, 40)}-${randomBytes(3).toString('hex')}`
    const ref = `kubernetes:${encodeURIComponent(spec.hostId)}:${name}`
    const logs = new WorkerLog(this.logPath(spec.kind, spec.id))
    const fail = (message: string, err?: unknown): never => {
      logs.append('system', message)
      logs.end()
      throw err instanceof ImagePullError ? err : new Error(message)
    }
    const ports: Omit<PublishedPort, 'ip'>[] = []
    for (const p of spec.ports)
      ports.push({ privatePort: p.port, publicPort: c.hostNetwork ? await freePort() : p.port, protocol: p.protocol })
    const labels = { ...spec.labels, [LABELS.kind]: spec.kind, [LABELS.id]: spec.id, [LABELS.host]: spec.hostId }
    logs.append('system', `creating Pod ${this.ns}/${name} from ${spec.image} for host ${spec.hostId}`)
    let pullSecret: string | null = null
    try {
      if (spec.pullAuth) pullSecret = await this.ensurePullSecret(spec.pullAuth)
      for (const m of spec.mounts) {
        if (m.kind === 'persistent')
          await this.ensureClaim(persistentClaim(m.name), 'ReadWriteOnce', m.sizeGb, { 'hangar.io/persistent': m.name })
        else if (m.kind === 'volume' && c.networkVolumes === 'pvc')
          await this.ensureClaim(volumeClaim(m.source), c.networkVolumeAccessMode, c.networkVolumeSizeGb, {
            'hangar.io/volume': m.source,
          })
      }
      if (c.traffic === 'nodePort' && ports.length > 0 && !c.hostNetwork) await this.createNodePortService(name, ports)
      const member = c.hostNetwork ? null : await this.clusterMember(spec)
      const pod = podManifest({
        spec: { ...spec, labels, env: { ...spec.env, ...member?.env } },
        name,
        config: c,
        nodeSelector: this.o.hostSelectors?.get(spec.hostId) ?? null,
        ports,
        runtimeEnv: this.runtimeEnv(spec, ports),
        pullSecret,
        dns: member?.dns,
      })
      if (member) pod.metadata!.labels![CLUSTER_LABEL] = member.dns.subdomain
      await this.api.createNamespacedPod({ namespace: this.ns, body: pod })
    } catch (err) {
      await this.remove(ref).catch(() => undefined)
      fail(`cannot create the Pod: ${kubeMessageOf(err)}`)
    }
    const argv = [...spec.entrypoint, ...spec.cmd]
    logs.append(
      'system',
      `starting: ${argv.length > 0 ? argv.map((a) => JSON.stringify(a)).join(' ') : "the image's own command"}`,
    )
    let pod: V1Pod
    try {
      pod = await this.started(name, hooks)
    } catch (err) {
      await this.remove(ref).catch(() => undefined)
      return fail((err as Error).message, err)
    }
    return this.attach(name, ref, pod, logs, 0)
  }

  async adopt(ref: RuntimeRef): Promise<Workload | null> {
    const name = this.podNameOf(ref)
    if (!name) return null
    await this.watch.ready()
    const pod = await this.readPod(name)
    if (!pod || !isRunning(pod) || pod.metadata?.deletionTimestamp) return null
    const all = labelsOf(pod)
    const kind = all[LABELS.kind] === 'pod' ? 'pod' : 'worker'
    const { log: logs, lastContainerTs } = WorkerLog.resume(this.logPath(kind, all[LABELS.id] ?? name))
    logs.append('system', 'adopted by a restarted control plane')
    return this.attach(name, ref, pod, logs, lastContainerTs)
  }

  async stats(ref: RuntimeRef): Promise<WorkloadStats | null> {
    const name = this.podNameOf(ref)
    if (!name) return null
    const pod = await this.readPod(name)
    if (!pod || !isRunning(pod) || !pod.spec?.nodeName) return null
    // The kubelet's summary (through the API server's node proxy): no metrics-server needed. Pod totals may be
    // empty where the kubelet reads containers through the CRI: the container's own figures are summed then.
    const sample = async () => {
      const answer: unknown = await this.api.connectGetNodeProxyWithPath({
        name: pod.spec!.nodeName!,
        path: 'stats/summary',
      })
      // The client parses the JSON answer itself; older ones gave the text.
      const summary = (typeof answer === 'string' ? JSON.parse(answer) : answer) as StatsSummary
      const p = summary.pods?.find((x) => x.podRef.name === name && x.podRef.namespace === this.ns)
      if (!p) return null
      const sum = (f: (c: StatsUsage) => number | undefined) =>
        (p.containers ?? []).reduce((n, c) => n + (f(c) ?? 0), 0)
      return {
        cpuNs: p.cpu?.usageCoreNanoSeconds || sum((c) => c.cpu?.usageCoreNanoSeconds),
        memoryBytes: p.memory?.workingSetBytes || sum((c) => c.memory?.workingSetBytes),
        at: performance.now(),
      }
    }
    try {
      const a = await sample()
      if (!a) return null
      await new Promise((r) => setTimeout(r, 500))
      const b = await sample()
      if (!b) return null
      return {
        cpuPercent: Math.max(0, ((b.cpuNs - a.cpuNs) / ((b.at - a.at) * 1e6)) * 100),
        memoryBytes: b.memoryBytes,
      }
    } catch {
      return null
    }
  }

  async remove(ref: RuntimeRef): Promise<void> {
    const name = this.podNameOf(ref)
    if (!name) return
    await this.deletePod(name, 0)
    await this.api.deleteNamespacedService({ name, namespace: this.ns }).catch((err: unknown) => {
      if (kubeStatusOf(err) !== 404) throw err
    })
  }

  async removePersistent(_hostId: string, name: string): Promise<void> {
    await this.deleteClaim(persistentClaim(name))
  }

  async list(labels: Record<string, string>): Promise<ListedWorkload[]> {
    const selector = { ...MANAGED_BY, ...Object.fromEntries(Object.entries(labels).filter(([k, v]) => isLabel(k, v))) }
    const found = await this.api.listNamespacedPod({
      namespace: this.ns,
      labelSelector: Object.entries(selector)
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    })
    const out: ListedWorkload[] = []
    for (const pod of found.items) {
      const all = labelsOf(pod)
      if (Object.entries(labels).some(([k, v]) => all[k] !== v)) continue
      const host = all[LABELS.host] ?? ''
      out.push({
        ref: `kubernetes:${encodeURIComponent(host)}:${pod.metadata!.name!}`,
        labels: all,
        running: isRunning(pod) && !pod.metadata?.deletionTimestamp,
      })
    }
    return out
  }

  /**
   * Waits until the Pod's container runs (or already ended). Says on the way why it waits: unschedulable is
   * NO_CAPACITY (given up after `scheduleTimeoutMs`), a pull that fails rejects with IMAGE_PULL_FAILED.
   */
  private started(name: string, hooks: StartHooks): Promise<V1Pod> {
    return new Promise<V1Pod>((resolve, reject) => {
      let timer: NodeJS.Timeout | null = null
      let waitingFor: string | null = null
      const onAbort = () =>
        done(() =>
          reject(
            new Error(
              `start called off: stopped before Pod ${this.ns}/${name} ran${waitingFor ? ` (${waitingFor})` : ''}`,
            ),
          ),
        )
      const done = (f: () => void) => {
        off()
        hooks.signal?.removeEventListener('abort', onAbort)
        if (timer) clearTimeout(timer)
        if (waitingFor) hooks.onWaiting?.(null)
        f()
      }
      const off = this.watch.on(name, (pod) => {
        if (!pod) return done(() => reject(new Error(`Pod ${this.ns}/${name} was deleted before it started`)))
        const cs = pod.status?.containerStatuses?.find((s) => s.name === CONTAINER)
        if (
          cs?.state?.running ||
          cs?.state?.terminated ||
          pod.status?.phase === 'Succeeded' ||
          pod.status?.phase === 'Failed'
        )
          return done(() => resolve(pod))
        const waiting = cs?.state?.waiting
        if (waiting?.reason && PULL_FAILURES.has(waiting.reason))
          return done(() =>
            reject(new ImagePullError(`${waiting.reason}: ${waiting.message ?? pod.spec?.containers[0]?.image}`)),
          )
        if (waiting?.reason && CREATE_FAILURES.has(waiting.reason))
          return done(() =>
            reject(new Error(`cannot start the container: ${waiting.reason}: ${waiting.message ?? ''}`)),
          )
        const unschedulable = pod.status?.conditions?.find(
          (x) => x.type === 'PodScheduled' && x.status === 'False' && x.reason === 'Unschedulable',
        )
        if (unschedulable) {
          const why = `NO_CAPACITY: ${unschedulable.message ?? 'no node fits'}`
          if (why !== waitingFor) hooks.onWaiting?.(why)
          waitingFor = why
          timer ??= setTimeout(
            () =>
              done(() =>
                reject(new Error(`${why} (unschedulable for ${Math.round(this.o.config.scheduleTimeoutMs / 1000)} s)`)),
              ),
            this.o.config.scheduleTimeoutMs,
          )
          return
        }
        if (waitingFor) {
          waitingFor = null
          hooks.onWaiting?.(null)
          if (timer) clearTimeout(timer)
          timer = null
        }
        if (waiting?.reason === 'ContainerCreating' && pod.spec?.nodeName) hooks.onPhase?.('STARTING')
      })
      if (hooks.signal?.aborted) onAbort()
      else hooks.signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  /** Follows a started Pod: its output once the container has started, its end, and stop. */
  private attach(name: string, ref: RuntimeRef, first: V1Pod, logs: WorkerLog, sinceMs: number): Workload {
    const declared = JSON.parse(first.metadata?.annotations?.[PORTS_ANNOTATION] ?? '[]') as Omit<PublishedPort, 'ip'>[]
    const c = this.o.config
    const ip =
      c.traffic === 'nodePort' && !c.hostNetwork
        ? (first.status?.hostIP ?? '127.0.0.1')
        : (first.status?.podIP ?? first.status?.hostIP ?? '127.0.0.1')
    const ports: PublishedPort[] = declared.map((p) => ({ ...p, ip }))
    let logsDone: Promise<void> | null = null
    let abortLogs: (() => void) | null = null
    let last: V1Pod = first
    const exited = new Promise<WorkloadExit>((resolve) => {
      const off = this.watch.on(name, (pod) => {
        if (pod) last = pod
        const cs = last.status?.containerStatuses?.find((s) => s.name === CONTAINER)
        if (!logsDone && (cs?.state?.running || cs?.state?.terminated)) {
          logsDone = this.followLogs(name, logs, sinceMs, (abort) => (abortLogs = abort)).catch((err: unknown) =>
            logs.append('system', `log stream failed: ${kubeMessageOf(err)}`),
          )
        }
        const t = cs?.state?.terminated
        if (t || !pod) {
          off()
          if (t) {
            const exit: WorkloadExit = { code: t.exitCode ?? null, signal: t.signal ? `SIG${t.signal}` : null }
            if (t.reason === 'OOMKilled') exit.reason = `out of memory (OOM killed, code ${t.exitCode})`
            else if (t.reason && t.reason !== 'Completed' && t.reason !== 'Error')
              exit.reason = `${t.reason}${t.message ? `: ${t.message.trim()}` : ''} (code ${t.exitCode})`
            resolve(exit)
          } else {
            resolve({ code: null, signal: 'SIGKILL', reason: `Pod ${this.ns}/${name} was deleted` })
          }
        }
      })
    }).then(async (exit) => {
      // The log stream ends with the container; do not wait long for a broken one.
      if (logsDone) await Promise.race([logsDone, new Promise((r) => setTimeout(r, 2_000).unref())])
      abortLogs?.()
      logs.append('system', `exited (${exit.reason ?? `code ${exit.code}`})`)
      logs.end()
      return exit
    })
    let ended = false
    void exited.then(() => (ended = true))
    return {
      ref,
      ports,
      exited,
      logs,
      stop: async (graceMs: number) => {
        if (ended) return
        // The kubelet sends SIGTERM, then SIGKILL once the grace period has passed.
        await this.deletePod(name, Math.max(1, Math.ceil(graceMs / 1000)))
        await exited
      },
    }
  }

  /** Follows the container's output (the log endpoint, follow, with timestamps) after `sinceMs` (epoch ms). */
  private async followLogs(
    name: string,
    logs: WorkerLog,
    sinceMs: number,
    onAbort: (abort: () => void) => void,
  ): Promise<void> {
    const stream = new PassThrough()
    const split = lineSplitter((raw) => {
      // `<RFC 3339 nano> <line>`
      const space = raw.indexOf(' ')
      const ts = Date.parse(raw.slice(0, space))
      // Lines without a timestamp are the kubelet's own (`rpc error: ... not found` once the container is gone).
      if (Number.isNaN(ts)) return logs.append('system', `log endpoint: ${raw}`)
      if (ts <= sinceMs) return
      logs.append('container', raw.slice(space + 1), ts)
    })
    const ended = new Promise<void>((resolve) => {
      stream.on('data', (chunk: Buffer) => split.push(chunk))
      stream.once('end', () => {
        split.flush()
        resolve()
      })
      stream.once('close', resolve)
    })
    const controller = await new Log(this.kc).log(this.ns, name, CONTAINER, stream, {
      follow: true,
      timestamps: true,
      sinceTime: sinceMs > 0 ? new Date(Math.floor(sinceMs / 1000) * 1000).toISOString() : undefined,
    })
    onAbort(() => {
      controller.abort()
      stream.end()
    })
    await ended
  }

  /** The Pod now (the watch's copy when it has one), or null when it does not exist. */
  private async readPod(name: string): Promise<V1Pod | null> {
    const cached = this.watch.get(name)
    if (cached) return cached
    try {
      return await this.api.readNamespacedPod({ name, namespace: this.ns })
    } catch (err) {
      if (kubeStatusOf(err) === 404) return null
      throw err
    }
  }

  private async deletePod(name: string, graceSeconds: number): Promise<void> {
    try {
      await this.api.deleteNamespacedPod({ name, namespace: this.ns, gracePeriodSeconds: graceSeconds })
    } catch (err) {
      if (kubeStatusOf(err) !== 404) throw err
    }
  }

  /** A `kubernetes.io/dockerconfigjson` Secret per registry and user, created or brought in step; returns its name. */
  private async ensurePullSecret(auth: NonNullable<WorkloadSpec['pullAuth']>): Promise<string> {
    const name = `hangar-registry-${dnsName(auth.server, 30)}-${shortHash(`${auth.server}\0${auth.username}`)}`
    const config = {
      auths: {
        [auth.server]: {
          username: auth.username,
          password: auth.password,
          auth: Buffer.from(`${auth.username}:${auth.password}`).toString('base64'),
        },
      },
    }
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/dockerconfigjson',
      metadata: { name, labels: { ...MANAGED_BY, 'hangar.io/registry': 'true' } },
      data: { '.dockerconfigjson': Buffer.from(JSON.stringify(config)).toString('base64') },
    }
    try {
      await this.api.replaceNamespacedSecret({ name, namespace: this.ns, body })
    } catch (err) {
      if (kubeStatusOf(err) !== 404) throw err
      await this.api.createNamespacedSecret({ namespace: this.ns, body })
    }
    return name
  }

  /** Creates a claim unless it exists; one still being deleted (an earlier removePersistent) is waited for first. */
  private async ensureClaim(
    name: string,
    mode: 'ReadWriteOnce' | 'ReadWriteMany',
    sizeGb: number,
    annotations: Record<string, string>,
  ): Promise<void> {
    for (let i = 0; i < 120; i++) {
      let existing
      try {
        existing = await this.api.readNamespacedPersistentVolumeClaim({ name, namespace: this.ns })
      } catch (err) {
        if (kubeStatusOf(err) !== 404) throw err
        existing = null
      }
      if (existing && !existing.metadata?.deletionTimestamp) return
      if (!existing) {
        try {
          await this.api.createNamespacedPersistentVolumeClaim({
            namespace: this.ns,
            body: {
              apiVersion: 'v1',
              kind: 'PersistentVolumeClaim',
              metadata: { name, labels: { ...MANAGED_BY }, annotations },
              spec: {
                accessModes: [mode],
                storageClassName: this.o.config.storageClass,
                resources: { requests: { storage: `${Math.max(1, sizeGb)}Gi` } },
              },
            },
          })
          return
        } catch (err) {
          if (kubeStatusOf(err) !== 409) throw err
        }
      }
      await new Promise((r) => setTimeout(r, 250))
    }
    throw new Error(`PersistentVolumeClaim ${this.ns}/${name} is still being deleted`)
  }

  /** Deletes a claim and waits until it is gone (its Pods must be gone first: they are removed before). */
  private async deleteClaim(name: string): Promise<void> {
    try {
      await this.api.deleteNamespacedPersistentVolumeClaim({ name, namespace: this.ns })
    } catch (err) {
      if (kubeStatusOf(err) === 404) return
      throw err
    }
    for (let i = 0; i < 240; i++) {
      try {
        await this.api.readNamespacedPersistentVolumeClaim({ name, namespace: this.ns })
      } catch (err) {
        if (kubeStatusOf(err) === 404) return
        throw err
      }
      await new Promise((r) => setTimeout(r, 250))
    }
  }

  /** A NodePort Service for one Pod (`traffic: nodePort`): the control plane reaches it at its node's address. */
  private async createNodePortService(name: string, ports: Omit<PublishedPort, 'ip'>[]): Promise<void> {
    const svc = await this.api.createNamespacedService({
      namespace: this.ns,
      body: {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, labels: { ...MANAGED_BY } },
        spec: {
          type: 'NodePort',
          selector: { [POD_NAME_LABEL]: name },
          ports: ports.map((p) => ({
            name: `p${p.privatePort}`,
            port: p.privatePort,
            targetPort: p.privatePort,
            protocol: 'TCP',
          })),
        },
      },
    })
    for (const p of ports)
      p.publicPort = svc.spec?.ports?.find((x) => x.port === p.privatePort)?.nodePort ?? p.publicPort
  }

  /**
   * A cluster member without host networking: a headless Service per cluster (created with its first member)
   * gives each member the DNS name `rank-<n>.<service>.<namespace>.svc.cluster.local`, and the addresses of the
   * env wiring (the loopback block a single machine uses) are replaced by those names.
   */
  private async clusterMember(
    spec: WorkloadSpec,
  ): Promise<{ dns: { hostname: string; subdomain: string }; env: Record<string, string> } | null> {
    const clusterId = spec.labels[LABELS.cluster]
    const rank = spec.labels[LABELS.clusterRank]
    if (!clusterId || rank === undefined) return null
    const service = `hangar-cluster-${dnsName(clusterId, 40)}`
    try {
      await this.api.createNamespacedService({
        namespace: this.ns,
        body: {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: service, labels: { ...MANAGED_BY } },
          spec: { clusterIP: 'None', publishNotReadyAddresses: true, selector: { [CLUSTER_LABEL]: service } },
        },
      })
    } catch (err) {
      if (kubeStatusOf(err) !== 409) throw err
    }
    const fqdn = (r: string) => `rank-${r}.${service}.${this.ns}.svc.cluster.local`
    const env: Record<string, string> = {}
    const primary = spec.env.PRIMARY_ADDR ?? spec.env.MASTER_ADDR
    for (const [k, v] of Object.entries(spec.env)) {
      if (primary && v === primary) env[k] = fqdn('0')
      else if (primary && v.startsWith(`${primary}:`)) env[k] = `${fqdn('0')}${v.slice(primary.length)}`
    }
    if (spec.env.NODE_ADDR) env.NODE_ADDR = fqdn(rank)
    return { dns: { hostname: `rank-${rank}`, subdomain: service }, env }
  }

  /** Mount paths and ports as the program sees them inside the container. */
  private runtimeEnv(spec: WorkloadSpec, ports: Omit<PublishedPort, 'ip'>[]): Record<string, string> {
    const env: Record<string, string> = {}
    const disk = spec.mounts.find((m) => m.kind === 'disk')
    if (disk && !spec.mounts.some((m) => m.kind !== 'disk' && m.target === disk.target))
      env.HANGAR_DISK_PATH = disk.target
    for (const m of spec.mounts) {
      if (m.kind === 'persistent') env.HANGAR_PERSISTENT_PATH = m.target
      else if (m.kind === 'volume') env.HANGAR_VOLUME_PATH = m.target
    }
    for (const p of spec.ports) {
      // With host networking the program listens on the chosen port; otherwise on its own.
      const listen = String(
        this.o.config.hostNetwork ? (ports.find((c) => c.privatePort === p.port)?.publicPort ?? p.port) : p.port,
      )
      env[`HANGAR_PORT_${p.port}`] = listen
      for (const n of p.env ?? []) env[n] = listen
    }
    return env
  }

  logPath(kind: WorkloadSpec['kind'], id: string): string {
    return join(this.o.dataDir, `${kind}s`, id, 'worker.log')
  }

  private podNameOf(ref: RuntimeRef): string | null {
    const m = /^kubernetes:([^:]*):([a-z0-9][-a-z0-9.]*)$/.exec(ref)
    return m ? m[2] : null
  }
}

/** The parts of the kubelet's stats summary read here. */
interface StatsUsage {
  cpu?: { usageNanoCores?: number; usageCoreNanoSeconds?: number }
  memory?: { workingSetBytes?: number }
}
interface StatsSummary {
  pods?: Array<StatsUsage & { podRef: { name: string; namespace: string }; containers?: StatsUsage[] }>
}

/** The workload's labels: the annotation (every label, as given) over the Kubernetes labels. */
function labelsOf(pod: V1Pod): Record<string, string> {
  const fromAnnotation = pod.metadata?.annotations?.[LABELS_ANNOTATION]
  return {
    ...(pod.metadata?.labels ?? {}),
    ...(fromAnnotation ? (JSON.parse(fromAnnotation) as Record<string, string>) : {}),
  }
}

/** Whether the Pod is scheduled or running (not ended). */
function isRunning(pod: V1Pod): boolean {
  return pod.status?.phase === 'Running' || pod.status?.phase === 'Pending'
}
