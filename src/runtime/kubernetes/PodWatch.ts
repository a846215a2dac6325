import { type CoreV1Api, type KubeConfig, type V1Pod, type V1Status, Watch } from '@kubernetes/client-node'
import type { Log } from '../../services/log.js'
import { kubeMessageOf, kubeStatusOf } from './kubeClient.js'

/** Label every Pod (and Secret, claim, Service) Hangar makes carries; the watch selects on it. */
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'hangar' } as const

/** Options of {@link PodWatch}. */
export interface PodWatchOptions {
  kubeConfig: KubeConfig
  api: CoreV1Api
  namespace: string
  /** Gets each failure once (with what failed and when it will be tried again), and the recovery. */
  log: Log
  /** The wait after a first failure, ms; it doubles with each failure in a row. Default 1 s. */
  backoffMs?: number
  /** The longest wait between two tries, ms. Default 30 s. */
  maxBackoffMs?: number
  /**
   * A watch that brings no event and no bookmark for this long is taken as stalled (a connection that died
   * without closing): it is ended and started again from a fresh list, ms. The API server is asked to end each
   * watch well before (and sends bookmarks meanwhile), so a healthy watch is never quiet this long. Default 5 min.
   */
  stallMs?: number
}

/** Where the watch stands, for health reports and tests. */
export interface PodWatchStatus {
  /** `listing`/`watching`: a try is under way; `waiting`: the next one is due in `retryInMs`; `stopped`. */
  state: 'stopped' | 'listing' | 'watching' | 'waiting'
  /** Failures since the watch was last healthy. */
  failures: number
  /** The wait chosen after the last failure (kept until a watch is healthy again), ms; null while healthy. */
  retryInMs: number | null
  /** The last failure since the watch was last healthy. */
  lastError: string | null
}

type Listener = (pod: V1Pod | null) => void

/**
 * One list-and-watch of Hangar's Pods in a namespace, shared by every workload (an informer): listeners get
 * each version of their Pod as the API server reports it (null once it is deleted). Status comes from this
 * watch, never from polling.
 *
 * It lists, then watches from the list's resourceVersion. A watch the server ends is watched again at once
 * from the last resourceVersion seen; one whose resourceVersion is too old (410 Gone) or that stalls starts
 * again from a fresh list, which reports the Pods deleted meanwhile as deleted. A failure is tried again after
 * a wait that doubles up to `maxBackoffMs` and starts over once a watch is healthy (it brought an event or a
 * bookmark, or stayed open for `maxBackoffMs` or half the server's timeout). A run of failures is logged once,
 * with the error (again only when the error changes), and its end once.
 *
 * Built on the client's `Watch` (the request, its authentication and the stream of events) rather than its
 * `ListWatch` informer: that one reports a failed first list as an event but resolves its `start()`, starts a
 * watch the server ended again at once without a wait (a server or proxy that ends each watch at once makes it
 * spin), leaves the rejection of its own relist after a 410 unhandled and gives no handle on the request, which
 * a stall check must end.
 */
export class PodWatch {
  private readonly pods = new Map<string, V1Pod>()
  private readonly listeners = new Map<string, Set<Listener>>()
  private readonly watch: Watch
  private readonly selector: string
  private readonly backoffMs: number
  private readonly maxBackoffMs: number
  private readonly stallMs: number
  private resourceVersion = ''
  /** The try under way; callbacks of an earlier one (ended, abandoned as stalled) are ignored. */
  private attempt = 0
  private controller: AbortController | null = null
  private state: PodWatchStatus['state'] = 'stopped'
  private lastActivity = 0
  private connectedAt = 0
  private healthy = false
  /** Whether the try under way began with a list (a 410 right after one is a fault, not an expiry). */
  private listed = false
  private failures = 0
  private retryInMs: number | null = null
  private trouble: { error: string; since: number } | null = null
  private retryTimer: NodeJS.Timeout | null = null
  private stallTimer: NodeJS.Timeout | null = null
  private first: { promise: Promise<void>; resolve(): void; reject(err: Error): void } | null = null
  private synced = false

  constructor(private readonly o: PodWatchOptions) {
    this.watch = new Watch(o.kubeConfig)
    this.selector = Object.entries(MANAGED_BY)
      .map(([k, v]) => `${k}=${v}`)
      .join(',')
    this.backoffMs = o.backoffMs ?? 1_000
    this.maxBackoffMs = Math.max(this.backoffMs, o.maxBackoffMs ?? 30_000)
    this.stallMs = o.stallMs ?? 300_000
  }

  /**
   * Starts the watch if it is not running and resolves once the first list is in (the cache then knows every
   * Pod). Rejects when that list fails, saying why; the next call tries again.
   */
  ready(): Promise<void> {
    if (this.synced) return Promise.resolve()
    if (this.first) return this.first.promise
    let resolve!: () => void
    let reject!: (err: Error) => void
    const promise = new Promise<void>((res, rej) => {
      resolve = res
      reject = rej
    })
    this.first = { promise, resolve, reject }
    this.stallTimer = setInterval(() => this.checkStall(), Math.max(10, Math.min(this.stallMs / 4, 10_000)))
    this.stallTimer.unref()
    this.connect()
    return promise
  }

  /** The Pod as last seen, if it exists. */
  get(name: string): V1Pod | undefined {
    return this.pods.get(name)
  }

  /** Calls `listener` with the Pod now (if the watch knows it) and on each change; returns the unsubscribe. */
  on(name: string, listener: Listener): () => void {
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

  status(): PodWatchStatus {
    return {
      state: this.state,
      failures: this.failures,
      retryInMs: this.retryInMs,
      lastError: this.trouble?.error ?? null,
    }
  }

  /** Ends the watch (a pending `ready()` rejects); `ready()` starts it again. */
  async stop(): Promise<void> {
    this.first?.reject(new Error(`the watch of the Pods of namespace ${this.o.namespace} was stopped`))
    this.reset()
  }

  /** One try: a list unless there is a resourceVersion to watch from, then the watch. */
  private connect(): void {
    const attempt = ++this.attempt
    const current = () => attempt === this.attempt
    this.lastActivity = Date.now()
    this.healthy = false
    this.listed = !this.resourceVersion
    void (async () => {
      if (!this.resourceVersion) {
        this.state = 'listing'
        let list
        try {
          list = await this.o.api.listNamespacedPod({ namespace: this.o.namespace, labelSelector: this.selector })
        } catch (err) {
          if (current()) this.failed(`cannot list the Pods: ${describe(err)}`, { relist: true })
          return
        }
        if (!current()) return
        this.lastActivity = Date.now()
        this.resourceVersion = list.metadata?.resourceVersion ?? ''
        this.replaceAll(list.items)
        if (!this.synced) {
          this.synced = true
          this.first?.resolve()
          this.first = null
        }
      }
      this.state = 'watching'
      this.connectedAt = Date.now()
      const controller = await this.watch.watch(
        `/api/v1/namespaces/${this.o.namespace}/pods`,
        {
          labelSelector: this.selector,
          resourceVersion: this.resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: this.timeoutSeconds(),
        },
        (type: string, obj: unknown) => {
          if (current()) this.onEvent(type, obj)
        },
        (err: unknown) => {
          if (current()) this.onWatchEnd(err)
        },
      )
      if (!current()) {
        controller.abort()
        return
      }
      this.controller = controller
      this.connectedAt = Date.now()
      this.lastActivity = this.connectedAt
    })()
  }

  private onEvent(type: string, obj: unknown): void {
    this.lastActivity = Date.now()
    if (type === 'ERROR') {
      const status = obj as V1Status
      if (status.code === 410) return this.gone()
      return this.failed(`the watch reported ${status.code ?? 'an error'}: ${status.message ?? status.reason ?? ''}`, {
        relist: false,
      })
    }
    const pod = obj as V1Pod
    const rv = pod.metadata?.resourceVersion
    if (rv) this.resourceVersion = rv
    this.markHealthy()
    const name = pod.metadata?.name
    if (type === 'BOOKMARK' || !name) return
    if (type === 'DELETED') {
      this.pods.delete(name)
      this.emit(name, null)
    } else if (type === 'ADDED' || type === 'MODIFIED') {
      this.pods.set(name, pod)
      this.emit(name, pod)
    }
  }

  /** The watch request ended: the server closed it (`err` null) or it failed. */
  private onWatchEnd(err: unknown): void {
    if (err) {
      const status = kubeStatusOf(err) ?? (err as { statusCode?: number }).statusCode
      if (status === 410) return this.gone()
      return this.failed(`the watch failed: ${describe(err)}`, { relist: false })
    }
    if (this.healthy || Date.now() - this.connectedAt >= this.healthyAfterMs()) return this.ended({ relist: false })
    // Ended at once without a word: waited for like a failure, so such a server is not asked again at once.
    this.failed('the API server ended the watch at once', { relist: false })
  }

  /**
   * 410 Gone: the resourceVersion is older than the server keeps (after a long watch, or an outage); a fresh
   * list catches up. Right after a fresh list it is a fault, waited for like one (else list and watch spin).
   */
  private gone(): void {
    if (this.healthy || !this.listed) return this.ended({ relist: true })
    this.failed('the watch answered 410 Gone right after a fresh list', { relist: true })
  }

  /** The try ended as it may (the server's timeout, an expired resourceVersion): the next starts at once. */
  private ended(o: { relist: boolean }): void {
    this.abandon(o)
    this.connect()
  }

  /** The try failed: the next starts after the back-off (or the first `ready()` rejects). */
  private failed(error: string, o: { relist: boolean }): void {
    this.abandon(o)
    if (!this.synced) {
      // The first list failed: no watch runs until `ready()` is called again.
      const first = this.first
      this.reset()
      first?.reject(new Error(`cannot watch the Pods of namespace ${this.o.namespace} (${this.server()}): ${error}`))
      return
    }
    this.failures++
    this.retryInMs = this.retryInMs === null ? this.backoffMs : Math.min(this.maxBackoffMs, this.retryInMs * 2)
    const fields = {
      namespace: this.o.namespace,
      server: this.server(),
      error,
      retryInMs: this.retryInMs,
      failures: this.failures,
    }
    if (!this.trouble) {
      this.trouble = { error, since: Date.now() }
      this.o.log.warn(fields, 'Pod watch failed; retrying with back-off (logged again when the error changes)')
    } else if (this.trouble.error !== error) {
      this.trouble.error = error
      this.o.log.warn(fields, 'Pod watch still failing, with another error')
    }
    this.state = 'waiting'
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null
      this.connect()
    }, this.retryInMs)
    this.retryTimer.unref()
  }

  /** The watch works: the back-off starts over, and a run of failures is reported over. */
  private markHealthy(): void {
    if (this.healthy) return
    this.healthy = true
    if (this.trouble) {
      this.o.log.info(
        {
          namespace: this.o.namespace,
          failures: this.failures,
          lastError: this.trouble.error,
          forMs: Date.now() - this.trouble.since,
        },
        'Pod watch recovered',
      )
    }
    this.trouble = null
    this.failures = 0
    this.retryInMs = null
  }

  /** How long a watch must stay open to count as healthy without an event: the cap, or half the server's timeout. */
  private healthyAfterMs(): number {
    return Math.min(this.maxBackoffMs, this.timeoutSeconds() * 500)
  }

  /** The server is asked to end each watch before the stall check would, so a quiet one is not taken as stalled. */
  private timeoutSeconds(): number {
    return Math.max(1, Math.floor((this.stallMs * 0.8) / 1000))
  }

  /** A try that lists or watches with no word for `stallMs` is ended and started again from a fresh list. */
  private checkStall(): void {
    if (this.state !== 'listing' && this.state !== 'watching') return
    const now = Date.now()
    // A watch open this long without an error is healthy even if its namespace is quiet.
    if (this.state === 'watching' && this.controller && now - this.connectedAt >= this.healthyAfterMs())
      this.markHealthy()
    const quiet = now - this.lastActivity
    if (quiet < this.stallMs) return
    this.healthy = false
    this.failed(
      `the ${this.state === 'listing' ? 'list' : 'watch'} stalled: no event or bookmark for ${quiet < 10_000 ? `${quiet} ms` : `${Math.round(quiet / 1000)} s`}`,
      { relist: true },
    )
  }

  /** Leaves the try under way: its request is ended and its callbacks are ignored from now on. */
  private abandon(o: { relist: boolean }): void {
    this.attempt++
    this.controller?.abort()
    this.controller = null
    if (o.relist) this.resourceVersion = ''
  }

  private reset(): void {
    this.abandon({ relist: true })
    if (this.retryTimer) clearTimeout(this.retryTimer)
    if (this.stallTimer) clearInterval(this.stallTimer)
    this.retryTimer = null
    this.stallTimer = null
    this.state = 'stopped'
    this.first = null
    this.synced = false
    this.failures = 0
    this.retryInMs = null
    this.trouble = null
  }

  /** Takes a fresh list: Pods not in it were deleted meanwhile, changed ones are reported. */
  private replaceAll(items: V1Pod[]): void {
    const seen = new Set<string>()
    for (const pod of items) {
      const name = pod.metadata?.name
      if (!name) continue
      seen.add(name)
      const before = this.pods.get(name)
      this.pods.set(name, pod)
      if (!before || before.metadata?.resourceVersion !== pod.metadata?.resourceVersion) this.emit(name, pod)
    }
    for (const name of [...this.pods.keys()]) {
      if (seen.has(name)) continue
      this.pods.delete(name)
      this.emit(name, null)
    }
  }

  private emit(name: string, pod: V1Pod | null): void {
    for (const l of [...(this.listeners.get(name) ?? [])]) l(pod)
  }

  private server(): string {
    return this.o.kubeConfig.getCurrentCluster()?.server ?? 'no cluster'
  }
}

/** An error as the API server or the connection put it (`403 Forbidden: pods is forbidden: ...`). */
function describe(err: unknown): string {
  const status = kubeStatusOf(err) ?? (err as { statusCode?: number } | null)?.statusCode
  const message = kubeMessageOf(err)
  return status && !message.includes(String(status)) ? `HTTP ${status}: ${message}` : message
}
