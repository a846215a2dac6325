import { randomBytes } from 'node:crypto'
import type { KubeConfig } from '@kubernetes/client-node'
import { kubeCall, type KubeHttp, kubeHttp, kubeWatch, MERGE_PATCH } from './kubeHttp.js'
import { creatingStatus, microTime, readyConditions, runningStatus } from './kubeletStatus.js'
import type { VirtualWorkers } from './VirtualWorkers.js'

/** Label of every Node (and Lease) VirtualNodes makes: leftovers of a killed run are found by it. */
export const VIRTUAL_LABEL = 'hangar.test/virtual'
/** Label of the run a Node belongs to: one run's cleanup never removes another's Nodes. */
export const VIRTUAL_RUN_LABEL = 'hangar.test/virtual-run'

/** A set of alike Nodes. */
export interface NodeGroup {
  /** Names are `<prefix>-<i>`, with the run's id between: `<prefix>-<run>-<i>`. */
  prefix: string
  count: number
  /** `nvidia.com/gpu` capacity of each. */
  gpus: number
  /** Value of the GPU label (`nvidia.com/gpu.product`), which Hangar groups Nodes into fleet hosts by; none: a CPU node. */
  gpuProduct?: string
  cpu?: number
  memoryGi?: number
  pods?: number
  /**
   * Pods bound to these Nodes are never started: they stay Pending with their container `ContainerCreating`,
   * as a Pod whose image takes minutes to pull looks (the stuck-start test).
   */
  stuck?: boolean
}

/** Options of {@link VirtualNodes}. */
export interface VirtualNodesOptions {
  kubeConfig: KubeConfig
  /** Workers are started here from each Pod's env. */
  workers: VirtualWorkers
  /** Namespace of the Pods to run (Hangar's). */
  namespace: string
  /** GPU label Hangar reads (its `runtime.kubernetes.gpuLabel`). */
  gpuLabel?: string
  /** Lease renewal of each Node, ms (the node lifecycle controller's grace period is 40 s). Default 10 s. */
  heartbeatMs?: number
  /**
   * The Ready condition's heartbeat, ms. With a fresh Lease the node lifecycle controller does not need it; a
   * kubelet with leases reports an unchanged status every 5 min. Default 60 s.
   */
  statusMs?: number
}

interface Known {
  node: string
  /** The worker id (the Pod's RUNPOD_POD_ID), null for a Pod that is not a Hangar worker. */
  workerId: string | null
  running: boolean
  deleting: boolean
}

/**
 * Fake Nodes on a real API server, as kwok makes them: the real scheduler binds Pods to them, and this
 * controller does what their kubelet would. It registers the Nodes (CPU, memory, pods, `nvidia.com/gpu`,
 * the GPU label), keeps them Ready (a Lease renewed every 10 s, the Ready condition every minute),
 * list-and-watches the Pods of the namespace bound to them, marks each Running (Pod IP, Ready condition,
 * container running) and starts a virtual worker from the Pod's own env (the worker protocol URLs and ids
 * Hangar put there). A Pod being deleted ends its worker and is removed at once (no kubelet confirms the
 * delete). `fail` loses a Node's workers and Pods, and the Node if asked. Every Node carries `VIRTUAL_LABEL`
 * and its run's label; `close` removes the run's Pods, Nodes and Leases.
 */
export class VirtualNodes {
  readonly run = randomBytes(3).toString('hex')
  /** Node name -> its group. */
  readonly nodes = new Map<string, NodeGroup>()
  /** Pod name -> performance.now() when its Running status was sent (watch lag is measured from it). */
  readonly runningAt = new Map<string, number>()
  readonly stats = { started: 0, ended: 0, writes: 0, errors: 0, firstError: null as string | null }
  private readonly pods = new Map<string, Known>()
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly aborts = new AbortController()
  private watching: Promise<void> | null = null
  private synced!: () => void
  private readonly ready = new Promise<void>((r) => (this.synced = r))

  private constructor(
    private readonly k: KubeHttp,
    private readonly o: VirtualNodesOptions,
  ) {}

  static async open(o: VirtualNodesOptions): Promise<VirtualNodes> {
    const v = new VirtualNodes(await kubeHttp(o.kubeConfig, 24), o)
    v.watching = v.watchPods()
    await v.ready
    return v
  }

  private get ns(): string {
    return this.o.namespace
  }

  /** Registers a group of Nodes and resolves once each is Ready and untainted (the scheduler will use it). */
  async add(group: NodeGroup): Promise<string[]> {
    const names = Array.from({ length: group.count }, (_, i) => `${group.prefix}-${this.run}-${i}`)
    for (const n of names) this.nodes.set(n, group)
    await inBatches(names, 16, (n) => this.register(n, group))
    for (const n of names) this.beat(n)
    const selector = `${VIRTUAL_RUN_LABEL}=${this.run}`
    const want = new Set(names)
    for (const t0 = Date.now(); ; ) {
      const list = await kubeCall(this.k, 'GET', `/api/v1/nodes?labelSelector=${encodeURIComponent(selector)}`)
      const usable = (list.body.items as any[]).filter(
        (n) => want.has(n.metadata.name) && !(n.spec?.taints ?? []).length && isReady(n),
      )
      if (usable.length === want.size) return names
      // The node lifecycle controller lifts each new Node's not-ready taint in turn: a thousand take minutes here.
      const limitMs = Math.max(120_000, names.length * 600)
      if (Date.now() - t0 > limitMs)
        throw new Error(`${usable.length} of ${want.size} virtual Nodes usable after ${limitMs / 1000} s`)
      await new Promise((r) => setTimeout(r, 500))
    }
  }

  private async register(name: string, g: NodeGroup): Promise<void> {
    const labels: Record<string, string> = {
      [VIRTUAL_LABEL]: 'true',
      [VIRTUAL_RUN_LABEL]: this.run,
      'kubernetes.io/hostname': name,
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
    }
    if (g.gpuProduct) labels[this.o.gpuLabel ?? 'nvidia.com/gpu.product'] = g.gpuProduct
    const node = await this.write('POST', '/api/v1/nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name, labels },
    })
    const stock = {
      cpu: String(g.cpu ?? 128),
      memory: `${g.memoryGi ?? 1024}Gi`,
      pods: String(g.pods ?? 110),
      'nvidia.com/gpu': String(g.gpus),
    }
    await this.write('PATCH', `/api/v1/nodes/${name}/status`, {
      status: {
        capacity: stock,
        allocatable: stock,
        conditions: readyConditions(),
        // No kubelet listens on port 1: the API server's log and stats requests for these Pods fail at once.
        addresses: [
          { type: 'InternalIP', address: '127.0.0.1' },
          { type: 'Hostname', address: name },
        ],
        daemonEndpoints: { kubeletEndpoint: { Port: 1 } },
        nodeInfo: { kubeletVersion: 'v1.20.2-virtual', architecture: 'amd64', operatingSystem: 'linux' },
      },
    })
    await this.write('POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name,
        labels: { [VIRTUAL_LABEL]: 'true', [VIRTUAL_RUN_LABEL]: this.run },
        // Deleted with its Node by the garbage collector.
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid: node.metadata.uid }],
      },
      spec: { holderIdentity: name, leaseDurationSeconds: 40, renewTime: microTime() },
    })
  }

  /** Renews the Node's Lease each `heartbeatMs` (first at a random point, so renewals spread out), its status less often. */
  private beat(name: string): void {
    const every = this.o.heartbeatMs ?? 10_000
    const statusEvery = Math.max(1, Math.round((this.o.statusMs ?? 60_000) / every))
    let n = 0
    const tick = () => {
      if (!this.nodes.has(name)) return
      n++
      const lease = this.write(
        'PATCH',
        `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`,
        { spec: { renewTime: microTime() } },
        MERGE_PATCH,
      )
      const status =
        n % statusEvery === 0
          ? this.write(
              'PATCH',
              `/api/v1/nodes/${name}/status`,
              { status: { conditions: readyConditions() } },
              MERGE_PATCH,
            )
          : null
      void Promise.all([lease, status]).catch((err) => this.error('heartbeat', err))
      this.after(every, tick)
    }
    this.after(Math.random() * every, tick)
  }

  private after(ms: number, f: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t)
      f()
    }, ms)
    this.timers.add(t)
  }

  /** List, then watch from the list's version; again from a fresh list when the version is too old. */
  private async watchPods(): Promise<void> {
    const path = `/api/v1/namespaces/${this.ns}/pods?fieldSelector=${encodeURIComponent('spec.nodeName!=')}`
    let rv: string | null = null
    while (!this.aborts.signal.aborted) {
      try {
        if (rv === null) {
          const list = await kubeCall(this.k, 'GET', path)
          const seen = new Set<string>()
          for (const p of list.body.items as any[]) {
            seen.add(p.metadata.name)
            this.onPod('ADDED', p)
          }
          // Pods deleted while no watch was open.
          for (const name of [...this.pods.keys()]) if (!seen.has(name)) this.onPod('DELETED', { metadata: { name } })
          rv = list.body.metadata.resourceVersion as string
          this.synced()
        }
        rv = await kubeWatch(this.k, path, rv, (type, p) => this.onPod(type, p), this.aborts.signal)
      } catch (err) {
        if (this.aborts.signal.aborted) return
        this.error('pod watch', err)
        rv = null
        await new Promise((r) => setTimeout(r, 1_000))
      }
    }
  }

  private onPod(type: string, pod: any): void {
    const name = pod.metadata.name as string
    const known = this.pods.get(name)
    if (type === 'DELETED') {
      if (known?.workerId) this.o.workers.end(known.workerId)
      if (known) this.stats.ended++
      this.pods.delete(name)
      return
    }
    const group = this.nodes.get(pod.spec?.nodeName)
    if (!group) return
    const k: Known = known ?? { node: pod.spec.nodeName, workerId: workerIdOf(pod), running: false, deleting: false }
    this.pods.set(name, k)
    if (pod.metadata.deletionTimestamp) {
      if (k.deleting) return
      k.deleting = true
      // Hangar asked for the delete (a stop): the worker ends now and, as no kubelet confirms, the Pod goes too.
      if (k.workerId) this.o.workers.end(k.workerId)
      void this.removePod(name)
      return
    }
    if (k.running || pod.status?.phase !== 'Pending') return
    k.running = true
    if (group.stuck) {
      void this.write(
        'PATCH',
        `/api/v1/namespaces/${this.ns}/pods/${name}/status`,
        creatingStatus(pod),
        MERGE_PATCH,
      ).catch((err) => this.error('pod status', err))
      return
    }
    this.runningAt.set(name, performance.now())
    void this.write('PATCH', `/api/v1/namespaces/${this.ns}/pods/${name}/status`, runningStatus(pod), MERGE_PATCH).then(
      () => {
        if (!k.workerId || k.deleting) return
        this.stats.started++
        this.o.workers.start(k.workerId, envOf(pod))
      },
      (err) => this.error('pod status', err),
    )
  }

  private async removePod(name: string): Promise<void> {
    await this.write(
      'DELETE',
      `/api/v1/namespaces/${this.ns}/pods/${name}`,
      { gracePeriodSeconds: 0 },
      undefined,
      [404],
    ).catch((err) => this.error('pod delete', err))
  }

  /** Pods (live) bound to `node` now, as this controller knows them. */
  podsOn(node: string): string[] {
    return [...this.pods].filter(([, k]) => !k.deleting && k.node === node).map(([n]) => n)
  }

  /**
   * A Node fails: its workers are lost (their jobs abandoned mid-run) and its Pods deleted at once; with
   * `removeNode` the Node goes too (its heartbeats stop), else it stays Ready and may take new Pods.
   */
  async fail(node: string, opts: { removeNode?: boolean } = {}): Promise<string[]> {
    if (opts.removeNode) this.nodes.delete(node)
    const list = await kubeCall(
      this.k,
      'GET',
      `/api/v1/namespaces/${this.ns}/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`,
    )
    const names: string[] = []
    for (const p of list.body.items as any[]) {
      const k = this.pods.get(p.metadata.name)
      if (k?.workerId) this.o.workers.stop(k.workerId)
      if (k) k.deleting = true
      names.push(p.metadata.name)
    }
    await Promise.all(names.map((n) => this.removePod(n)))
    if (opts.removeNode) await this.write('DELETE', `/api/v1/nodes/${node}`, undefined, undefined, [404])
    return names
  }

  /** Ends the run: its workers, its Pods (force-deleted), its Nodes and Leases. */
  async close(): Promise<void> {
    this.aborts.abort()
    for (const t of this.timers) clearTimeout(t)
    await this.watching
    const mine = [...this.nodes.keys()]
    this.nodes.clear()
    for (const k of this.pods.values()) if (k.workerId) this.o.workers.end(k.workerId)
    await removeRun(this.k, this.ns, `${VIRTUAL_RUN_LABEL}=${this.run}`, mine)
    await this.k.dispatcher.close()
  }

  /** Removes every virtual Node (any run) with its Pods and Leases: leftovers of a run that was killed. */
  static async removeAll(kc: KubeConfig, namespace: string): Promise<void> {
    const k = await kubeHttp(kc, 8)
    const nodes = await kubeCall(k, 'GET', `/api/v1/nodes?labelSelector=${VIRTUAL_LABEL}%3Dtrue`)
    const names = (nodes.body.items as any[]).map((n) => n.metadata.name as string)
    await removeRun(k, namespace, `${VIRTUAL_LABEL}=true`, names)
    await k.dispatcher.close()
  }

  private async write(
    method: 'POST' | 'PATCH' | 'DELETE',
    path: string,
    body: unknown,
    contentType?: string,
    ok?: number[],
  ): Promise<any> {
    this.stats.writes++
    return (
      await kubeCall(this.k, method, path, body, {
        contentType: contentType ?? (method === 'PATCH' ? MERGE_PATCH : undefined),
        ok,
      })
    ).body
  }

  private error(what: string, err: unknown): void {
    this.stats.errors++
    this.stats.firstError ??= `${what}: ${err instanceof Error ? err.message : String(err)}`
  }
}

/** Deletes the Pods on `nodes`, then the Nodes and Leases matching `selector`. */
async function removeRun(k: KubeHttp, ns: string, selector: string, nodes: string[]): Promise<void> {
  const set = new Set(nodes)
  const pods = await kubeCall(
    k,
    'GET',
    `/api/v1/namespaces/${ns}/pods?fieldSelector=${encodeURIComponent('spec.nodeName!=')}`,
  )
  const on = (pods.body.items as any[]).filter((p) => set.has(p.spec.nodeName)).map((p) => p.metadata.name as string)
  await inBatches(on, 16, (n) =>
    kubeCall(k, 'DELETE', `/api/v1/namespaces/${ns}/pods/${n}`, { gracePeriodSeconds: 0 }, { ok: [404] }).then(
      () => undefined,
    ),
  )
  const q = `labelSelector=${encodeURIComponent(selector)}`
  await kubeCall(k, 'DELETE', `/api/v1/nodes?${q}`)
  await kubeCall(k, 'DELETE', `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?${q}`)
}

async function inBatches<T>(items: T[], width: number, f: (t: T) => Promise<unknown>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) await f(items[next++])
    }),
  )
}

function isReady(node: any): boolean {
  return (node.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True')
}

/** The Pod's env as plain values (Hangar resolves secret references before the Pod is made). */
function envOf(pod: any): Record<string, string> {
  const env: Record<string, string> = {}
  for (const e of (pod.spec.containers[0]?.env ?? []) as { name: string; value?: string }[])
    if (e.value !== undefined) env[e.name] = e.value
  return env
}

/** The worker id of a Hangar worker Pod (its RUNPOD_POD_ID), null for any other Pod. */
function workerIdOf(pod: any): string | null {
  const env = envOf(pod)
  return env.RUNPOD_WEBHOOK_GET_JOB && env.RUNPOD_POD_ID ? env.RUNPOD_POD_ID : null
}
