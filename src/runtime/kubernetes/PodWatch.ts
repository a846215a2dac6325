import {
  type CoreV1Api,
  type KubeConfig,
  makeInformer,
  type Informer,
  type ObjectCache,
  type V1Pod,
} from '@kubernetes/client-node'

/** Label every Pod (and Secret, claim, Service) Hangar makes carries; the watch selects on it. */
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'hangar' } as const

/**
 * One list-and-watch of Hangar's Pods in a namespace, shared by every workload: listeners get each version of
 * their Pod as the API server reports it (null once it is deleted). Status comes from this watch, never from
 * polling. A broken watch is started again after a second (the informer lists anew, so nothing is missed:
 * Pods deleted meanwhile are reported deleted).
 */
export class PodWatch {
  private readonly informer: Informer<V1Pod> & ObjectCache<V1Pod>
  private readonly listeners = new Map<string, Set<(pod: V1Pod | null) => void>>()
  private started: Promise<void> | null = null
  private stopped = false

  constructor(
    kc: KubeConfig,
    api: CoreV1Api,
    private readonly namespace: string,
  ) {
    const selector = Object.entries(MANAGED_BY)
      .map(([k, v]) => `${k}=${v}`)
      .join(',')
    this.informer = makeInformer(
      kc,
      `/api/v1/namespaces/${namespace}/pods`,
      () => api.listNamespacedPod({ namespace, labelSelector: selector }),
      selector,
    )
    const emit = (pod: V1Pod | null, name: string | undefined) => {
      if (!name) return
      for (const l of [...(this.listeners.get(name) ?? [])]) l(pod)
    }
    this.informer.on('add', (p) => emit(p, p.metadata?.name))
    this.informer.on('update', (p) => emit(p, p.metadata?.name))
    this.informer.on('delete', (p) => emit(null, p.metadata?.name))
    this.informer.on('error', () => {
      if (this.stopped) return
      setTimeout(() => {
        if (!this.stopped) void this.informer.start().catch(() => undefined)
      }, 1_000).unref()
    })
  }

  /** Resolves once the first list is in (the cache then knows every Pod). */
  ready(): Promise<void> {
    this.started ??= this.informer.start()
    return this.started
  }

  /** The Pod as last seen, if it exists. */
  get(name: string): V1Pod | undefined {
    return this.informer.get(name, this.namespace)
  }

  /** Calls `listener` with the Pod now (if the watch knows it) and on each change; returns the unsubscribe. */
  on(name: string, listener: (pod: V1Pod | null) => void): () => void {
    let set = this.listeners.get(name)
    if (!set) this.listeners.set(name, (set = new Set()))
    set.add(listener)
    const now = this.get(name)
    if (now) queueMicrotask(() => set.has(listener) && listener(now))
    return () => {
      set.delete(listener)
      if (set.size === 0 && this.listeners.get(name) === set) this.listeners.delete(name)
    }
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.informer.stop()
  }
}
