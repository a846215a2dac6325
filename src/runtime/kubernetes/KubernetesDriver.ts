import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { CoreV1Api, Log as KubeLog, VersionApi, type KubeConfig, type V1Pod } from '@kubernetes/client-node'
import { Slots } from '../Slots.js'
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
import { type Log, stderrLog } from '../../services/log.js'
import { lineSplitter, WorkerLog } from '../WorkerLog.js'
import { kubeConfigOf, kubeMessageOf, kubeStatusOf } from './kubeClient.js'
import type { KubernetesConfig } from './KubernetesConfig.js'
import {
  CONTAINER,
  dnsName,
  isLabel,
  LABELS_ANNOTATION,
  persistentClaim,
  podManifest,
  PORTS_ANNOTATION,
  volumeClaim,
} from './podManifest.js'
import { CLUSTER_LABEL, PodResources } from './PodResources.js'
import { containerStarted, exitOf, isLive, isRunning, startStateOf } from './podStatus.js'
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
  /** Where the watch of the Pods reports its failures; stderr when not given. */
  log?: Log
}

/** Pod deletions sent to the API server at once, as the runtime's 64 starts are (HostRuntimes). */
export const DELETES_AT_ONCE = 32

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
  /**
   * A host here is every Node of one GPU model (hundreds, in a fleet), whose Pods the scheduler spreads: only
   * the cluster's bound (the driver's, for its API server) applies. With a host's bound of 8, 400 GPU workers
   * on 200 Nodes took 111 s to place, 8 Pods in flight at a time; 29 s without (bench/RESULTS.md).
   */
  readonly hostStartLimit = Number.POSITIVE_INFINITY
  readonly kc: KubeConfig
  readonly api: CoreV1Api
  private readonly watch: PodWatch
  private readonly resources: PodResources
  private readonly ns: string
  /** Pod DELETEs in flight (see deletePod). */
  private readonly deletes = new Slots(DELETES_AT_ONCE)

  constructor(private readonly o: KubernetesDriverOptions) {
    this.kc = o.kubeConfig ?? kubeConfigOf(o.config)
    this.api = this.kc.makeApiClient(CoreV1Api)
    this.ns = o.config.namespace
    this.watch = new PodWatch({
      kubeConfig: this.kc,
      api: this.api,
      namespace: this.ns,
      log: o.log ?? stderrLog,
      stallMs: o.config.watchStallMs,
    })
    this.resources = new PodResources({ api: this.api, namespace: this.ns, storageClass: o.config.storageClass })
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
    let ports: Omit<PublishedPort, 'ip'>[] = []
    for (const p of spec.ports)
      ports.push({ privatePort: p.port, publicPort: c.hostNetwork ? await freePort() : p.port, protocol: p.protocol })
    const labels = { ...spec.labels, [LABELS.kind]: spec.kind, [LABELS.id]: spec.id, [LABELS.host]: spec.hostId }
    logs.append('system', `creating Pod ${this.ns}/${name} from ${spec.image} for host ${spec.hostId}`)
    let pullSecret: string | null = null
    try {
      if (spec.pullAuth) pullSecret = await this.resources.ensurePullSecret(spec.pullAuth)
      for (const m of spec.mounts) {
        if (m.kind === 'persistent')
          await this.resources.ensureClaim(persistentClaim(m.name), {
            mode: 'ReadWriteOnce',
            sizeGb: m.sizeGb,
            annotations: { 'hangar.io/persistent': m.name },
          })
        else if (m.kind === 'volume' && c.networkVolumes === 'pvc')
          await this.resources.ensureClaim(volumeClaim(m.source), {
            mode: c.networkVolumeAccessMode,
            sizeGb: c.networkVolumeSizeGb,
            annotations: { 'hangar.io/volume': m.source },
          })
      }
      if (c.traffic === 'nodePort' && ports.length > 0 && !c.hostNetwork)
        ports = await this.resources.createNodePortService(name, ports)
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
      await this.removeAfterFailedStart(ref, logs)
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
      await this.removeAfterFailedStart(ref, logs)
      return fail((err as Error).message, err)
    }
    return this.attach(name, ref, pod, logs, 0)
  }

  /** Removes what a failed start made; a failure to is noted in the workload's log (the start's own error wins). */
  private async removeAfterFailedStart(ref: RuntimeRef, logs: WorkerLog): Promise<void> {
    try {
      await this.remove(ref)
    } catch (err) {
      logs.append('system', `cannot remove what the failed start made: ${kubeMessageOf(err)}`)
    }
  }

  async adopt(ref: RuntimeRef): Promise<Workload | null> {
    const name = this.podNameOf(ref)
    if (!name) return null
    await this.watch.ready()
    const pod = await this.readPod(name)
    if (!pod || !isLive(pod)) return null
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
      // Stats are best effort: a node whose kubelet does not answer (or a Pod that just ended) has none now.
      return null
    }
  }

  async remove(ref: RuntimeRef): Promise<void> {
    const name = this.podNameOf(ref)
    if (!name) return
    await this.deletePod(name, 0)
    await this.resources.deleteService(name)
  }

  async removePersistent(_hostId: string, name: string): Promise<void> {
    await this.resources.deleteClaim(persistentClaim(name))
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
        running: isLive(pod),
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
        const state = startStateOf(pod)
        switch (state.kind) {
          case 'started':
            return done(() => resolve(pod!))
          case 'deleted':
            return done(() => reject(new Error(`Pod ${this.ns}/${name} was deleted before it started`)))
          case 'pullFailed':
            return done(() => reject(new ImagePullError(state.reason)))
          case 'cannotStart':
            return done(() => reject(new Error(`cannot start the container: ${state.reason}`)))
          case 'ended':
            return done(() =>
              reject(new Error(`Pod ${this.ns}/${name} ended before its container ran: ${state.reason}`)),
            )
          case 'unschedulable': {
            if (state.why !== waitingFor) hooks.onWaiting?.(state.why)
            waitingFor = state.why
            const why = state.why
            timer ??= setTimeout(
              () =>
                done(() =>
                  reject(
                    new Error(`${why} (unschedulable for ${Math.round(this.o.config.scheduleTimeoutMs / 1000)} s)`),
                  ),
                ),
              this.o.config.scheduleTimeoutMs,
            )
            return
          }
        }
        if (waitingFor) {
          waitingFor = null
          hooks.onWaiting?.(null)
          if (timer) clearTimeout(timer)
          timer = null
        }
        if (state.kind === 'creating') hooks.onPhase?.('STARTING')
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
        if (!logsDone && containerStarted(last)) {
          logsDone = this.followLogs(name, logs, sinceMs, (abort) => (abortLogs = abort)).catch((err: unknown) =>
            logs.append('system', `log stream failed: ${kubeMessageOf(err)}`),
          )
        }
        const exit = exitOf(pod, last)
        if (exit) {
          off()
          resolve(exit)
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
    const controller = await new KubeLog(this.kc).log(this.ns, name, CONTAINER, stream, {
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

  /**
   * At most DELETES_AT_ONCE Pod deletions are sent at once, as starts are bounded: scaling 2,000 workers down
   * (or deleting their endpoints) sent 2,000 DELETEs together, and 2,743 attempts failed with a reset connection
   * before the stops' retries got through (fleet bench, issue 35). A slot is held for the request only, not for
   * the Pod's termination.
   */
  private async deletePod(name: string, graceSeconds: number): Promise<void> {
    const release = await this.deletes.acquire()
    try {
      await this.api.deleteNamespacedPod({ name, namespace: this.ns, gracePeriodSeconds: graceSeconds })
    } catch (err) {
      if (kubeStatusOf(err) !== 404) throw err
    } finally {
      release()
    }
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
    const service = await this.resources.ensureClusterService(clusterId)
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
