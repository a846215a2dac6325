import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { KubeConfig, type V1PersistentVolumeClaim, type V1Pod } from '@kubernetes/client-node'

/** What the next watch request gets (in order; once the plan is empty, `stream`). */
export type WatchPlan =
  /** 200, the events after its resourceVersion, then each change as it happens. */
  | 'stream'
  /** 200 and its headers, then nothing ever (a connection that died without closing). */
  | 'silent'
  /** 200, then the end at once. */
  | 'close'
  /** 200 and an ERROR event with a 410 Status (its resourceVersion is too old), then the end. */
  | 'gone'
  /** This HTTP status with a Status body. */
  | number

/** One request as the server saw it. */
export interface SeenRequest {
  method: string
  path: string
  query: URLSearchParams
  /** `list` and `watch` of Pods; `other` for everything else. */
  kind: 'list' | 'watch' | 'other'
}

/**
 * A Kubernetes API server of one namespace's Pods (list, watch: chunked JSON events from a resourceVersion,
 * bookmarks, 410 Gone; delete) and PersistentVolumeClaims (get, create, delete), on an ephemeral port,
 * with faults to script: the real @kubernetes/client-node runs against it. Nothing but what the tests use.
 */
export interface KubeApiServer {
  /** A kubeconfig for it (plain HTTP, a bearer token). */
  kubeConfig(): KubeConfig
  readonly requests: SeenRequest[]
  /** Called as each request arrives, before it is answered. */
  onRequest: ((r: SeenRequest) => void) | null
  /** HTTP statuses the next lists of Pods get, in order (then a list). */
  readonly listFaults: number[]
  /** What the next watches get, in order. */
  readonly watchPlan: WatchPlan[]
  /** Adds or changes a Pod; `quietly`: open watches are not told (they miss it, as across a compaction). */
  putPod(pod: V1Pod, o?: { quietly?: boolean }): V1Pod
  deletePod(name: string, o?: { quietly?: boolean }): void
  /** A BOOKMARK event to each open watch. */
  bookmark(): void
  /** Sends each open watch an ERROR event with this Status code (410: its resourceVersion is too old), then ends it. */
  failWatches(code: number, message: string): void
  /** Watches open now (streaming or silent). */
  openWatches(): number
  /** DELETEs of Pods being answered now, and the most at once so far. */
  readonly podDeletes: { now: number; most: number }
  /** Claims; one with finalizers is only marked deleted by a DELETE (as the pvc-protection finalizer does). */
  readonly claims: Map<string, V1PersistentVolumeClaim>
  close(): Promise<void>
}

export async function startKubeApiServer(namespace = 'hangar'): Promise<KubeApiServer> {
  let rv = 100
  const pods = new Map<string, V1Pod>()
  const history: Array<{ rv: number; type: string; object: unknown }> = []
  const watches = new Set<{ res: ServerResponse; streaming: boolean }>()
  const claims = new Map<string, V1PersistentVolumeClaim>()
  const podsPath = `/api/v1/namespaces/${namespace}/pods`
  const claimsPath = `/api/v1/namespaces/${namespace}/persistentvolumeclaims/`

  const status = (res: ServerResponse, code: number, message: string) => {
    res.writeHead(code, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, code }))
  }
  const json = (res: ServerResponse, body: unknown) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify(body))
  }
  const send = (res: ServerResponse, type: string, object: unknown) =>
    res.write(`${JSON.stringify({ type, object })}\n`)
  const record = (type: string, object: V1Pod, quietly: boolean) => {
    history.push({ rv, type, object })
    if (!quietly) for (const w of watches) if (w.streaming) send(w.res, type, object)
  }

  const server: KubeApiServer = {
    kubeConfig() {
      const kc = new KubeConfig()
      kc.loadFromOptions({
        clusters: [{ name: 'fake', server: url, skipTLSVerify: true }],
        users: [{ name: 'fake', token: 'fake-token' }],
        contexts: [{ name: 'fake', cluster: 'fake', user: 'fake' }],
        currentContext: 'fake',
      })
      return kc
    },
    requests: [],
    onRequest: null,
    listFaults: [],
    watchPlan: [],
    claims,
    podDeletes: { now: 0, most: 0 },
    putPod(pod, o = {}) {
      const name = pod.metadata!.name!
      const type = pods.has(name) ? 'MODIFIED' : 'ADDED'
      const stored: V1Pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        ...pod,
        metadata: { ...pod.metadata, namespace, resourceVersion: String(++rv) },
      }
      pods.set(name, stored)
      record(type, stored, o.quietly ?? false)
      return stored
    },
    deletePod(name, o = {}) {
      const pod = pods.get(name)
      if (!pod) return
      pods.delete(name)
      record('DELETED', { ...pod, metadata: { ...pod.metadata, resourceVersion: String(++rv) } }, o.quietly ?? false)
    },
    bookmark() {
      for (const w of watches)
        if (w.streaming)
          send(w.res, 'BOOKMARK', { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(rv) } })
    },
    failWatches(code, message) {
      for (const w of [...watches]) {
        send(w.res, 'ERROR', { kind: 'Status', apiVersion: 'v1', status: 'Failure', message, code })
        w.res.end()
        watches.delete(w)
      }
    },
    openWatches: () => watches.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const w of watches) w.res.destroy()
        watches.clear()
        http.closeAllConnections()
        http.close(() => resolve())
      }),
  }

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', 'http://x')
    const watch = u.searchParams.get('watch') === 'true'
    const seen: SeenRequest = {
      method: req.method ?? 'GET',
      path: u.pathname,
      query: u.searchParams,
      kind: u.pathname === podsPath ? (watch ? 'watch' : 'list') : 'other',
    }
    server.requests.push(seen)
    server.onRequest?.(seen)
    if (req.headers.authorization !== 'Bearer fake-token') return status(res, 401, 'Unauthorized')
    if (seen.kind === 'list') {
      const fault = server.listFaults.shift()
      if (fault === 403)
        return status(
          res,
          403,
          `pods is forbidden: User "system:serviceaccount:${namespace}:hangar" cannot list resource "pods" in API group "" in the namespace "${namespace}"`,
        )
      if (fault) return status(res, fault, `the fake API server answers ${fault}`)
      return json(res, {
        apiVersion: 'v1',
        kind: 'PodList',
        metadata: { resourceVersion: String(rv) },
        items: [...pods.values()],
      })
    }
    if (seen.kind === 'watch') {
      const plan = server.watchPlan.shift() ?? 'stream'
      if (typeof plan === 'number') return status(res, plan, `the fake API server answers ${plan}`)
      res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' })
      res.flushHeaders()
      if (plan === 'close') return res.end()
      if (plan === 'gone') {
        send(res, 'ERROR', { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410 })
        return res.end()
      }
      const w = { res, streaming: plan === 'stream' }
      watches.add(w)
      req.on('close', () => watches.delete(w))
      if (w.streaming) {
        const from = Number(u.searchParams.get('resourceVersion') || '0')
        for (const e of history) if (e.rv > from) send(res, e.type, e.object)
      }
      return
    }
    if (u.pathname.startsWith(claimsPath)) {
      const name = decodeURIComponent(u.pathname.slice(claimsPath.length))
      const claim = claims.get(name)
      if (!claim) return status(res, 404, `persistentvolumeclaims "${name}" not found`)
      if (req.method === 'GET') return json(res, claim)
      if (req.method === 'DELETE') {
        if ((claim.metadata?.finalizers ?? []).length > 0)
          claim.metadata = { ...claim.metadata, deletionTimestamp: new Date() }
        else claims.delete(name)
        return json(res, claim)
      }
    }
    if (req.method === 'DELETE' && u.pathname.startsWith(`${podsPath}/`)) {
      // Answered after a few ms, as a busy API server would: deletes sent together are in flight together.
      const name = decodeURIComponent(u.pathname.slice(podsPath.length + 1))
      server.podDeletes.now++
      server.podDeletes.most = Math.max(server.podDeletes.most, server.podDeletes.now)
      setTimeout(() => {
        server.podDeletes.now--
        const pod = pods.get(name)
        if (!pod) return status(res, 404, `pods "${name}" not found`)
        server.deletePod(name)
        json(res, pod)
      }, 20)
      return
    }
    status(res, 404, `the fake API server does not serve ${req.method} ${u.pathname}`)
  }

  const http = createServer(handle)
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  return server
}

/** A Pod as Hangar makes it, enough for the watch. */
export function fakePod(name: string, phase = 'Pending'): V1Pod {
  return {
    metadata: { name, labels: { 'app.kubernetes.io/managed-by': 'hangar' } },
    spec: { containers: [{ name: 'main', image: 'localhost/bb:latest' }] },
    status: { phase },
  }
}
