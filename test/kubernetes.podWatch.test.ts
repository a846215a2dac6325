import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node'
import { afterEach, describe, expect, it } from 'vitest'
import { parseConfig } from '../src/config.js'
import { DELETES_AT_ONCE, KubernetesDriver } from '../src/runtime/kubernetes/KubernetesDriver.js'
import { PodWatch, type PodWatchOptions } from '../src/runtime/kubernetes/PodWatch.js'
import type { WorkloadSpec } from '../src/runtime/RuntimeDriver.js'
import type { Log } from '../src/services/log.js'
import { fakePod, type KubeApiServer, startKubeApiServer } from './helpers/kubeApiServer.js'

/** A Log that keeps what it is given. */
function recordingLog() {
  const lines: Array<{ level: string; fields: Record<string, unknown>; message: string }> = []
  const at =
    (level: string) =>
    (fields: object, message: string): void => {
      lines.push({ level, fields: fields as Record<string, unknown>, message })
    }
  const log: Log = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
  return { log, lines, at: (level: string) => lines.filter((l) => l.level === level) }
}

/** Resolves with the first value `listen` gets for which `accept` holds. */
function next<T>(subscribe: (listener: (v: T) => void) => () => void, accept: (v: T) => boolean): Promise<T> {
  return new Promise((resolve) => {
    const off = subscribe((v) => {
      if (!accept(v)) return
      off()
      resolve(v)
    })
  })
}

/** Resolves when the server sees a request for which `accept` holds. */
function request(api: KubeApiServer, accept: (kind: string) => boolean): Promise<void> {
  return new Promise((resolve) => {
    const before = api.onRequest
    api.onRequest = (r) => {
      before?.(r)
      if (!accept(r.kind)) return
      api.onRequest = before
      resolve()
    }
  })
}

describe('PodWatch against a Kubernetes API server', () => {
  let api: KubeApiServer
  let watch: PodWatch | null = null
  afterEach(async () => {
    await watch?.stop()
    watch = null
    await api?.close()
  })

  async function start(o: Partial<PodWatchOptions> = {}) {
    api = await startKubeApiServer('hangar')
    const kc = api.kubeConfig()
    const rec = recordingLog()
    watch = new PodWatch({
      kubeConfig: kc,
      api: kc.makeApiClient(CoreV1Api),
      namespace: 'hangar',
      log: rec.log,
      backoffMs: 20,
      maxBackoffMs: 160,
      stallMs: 60_000,
      ...o,
    })
    return { w: watch, rec }
  }

  it("lists, then watches from the list's resourceVersion with bookmarks, and reports each version of a Pod", async () => {
    const { w } = await start()
    api.putPod(fakePod('a'))
    await w.ready()
    expect(w.get('a')?.status?.phase).toBe('Pending')
    const watchRequest = await new Promise<URLSearchParams>((resolve) => {
      const found = api.requests.find((r) => r.kind === 'watch')
      if (found) return resolve(found.query)
      api.onRequest = (r) => r.kind === 'watch' && resolve(r.query)
    })
    expect(watchRequest.get('resourceVersion')).toBe('101')
    expect(watchRequest.get('allowWatchBookmarks')).toBe('true')
    expect(watchRequest.get('labelSelector')).toBe('app.kubernetes.io/managed-by=hangar')
    await expect.poll(() => api.openWatches()).toBe(1)

    const running = next<V1Pod | null>(
      (l) => w.on('a', l),
      (p) => p?.status?.phase === 'Running',
    )
    api.putPod(fakePod('a', 'Running'))
    expect((await running)?.metadata?.resourceVersion).toBe('102')
    const deleted = next<V1Pod | null>(
      (l) => w.on('a', l),
      (p) => p === null,
    )
    api.deletePod('a')
    await deleted
    expect(w.get('a')).toBeUndefined()
  })

  it('rejects ready() when the first list fails, saying why, starts no watch, and tries again on the next ready()', async () => {
    const { w, rec } = await start()
    api.listFaults.push(403)
    await expect(w.ready()).rejects.toThrow(/Pods of namespace hangar .*HTTP 403: pods is forbidden: User/)
    expect(w.status().state).toBe('stopped')
    expect(api.requests.filter((r) => r.kind !== 'other').map((r) => r.kind)).toEqual(['list'])
    // The caller of ready() has the error; the watch adds no log line of its own.
    expect(rec.lines).toEqual([])

    api.putPod(fakePod('b'))
    await w.ready()
    expect(w.get('b')).toBeDefined()
  })

  it('backs off doubling up to the cap, logs a run of failures once, and starts over after a healthy watch', async () => {
    const { w, rec } = await start()
    for (let i = 0; i < 6; i++) api.watchPlan.push(500)
    // The wait chosen before each watch request, read as the request arrives.
    const waits: Array<number | null> = []
    api.onRequest = (r) => {
      if (r.kind === 'watch') waits.push(w.status().retryInMs)
    }
    await w.ready()
    const healthy = next<V1Pod | null>(
      (l) => w.on('c', l),
      (p) => p !== null,
    )
    // The seventh watch streams; the Pod it brings makes it healthy.
    await expect.poll(() => api.openWatches(), { timeout: 10_000 }).toBe(1)
    api.putPod(fakePod('c'))
    await healthy
    expect(waits).toEqual([null, 20, 40, 80, 160, 160, 160])
    expect(w.status()).toMatchObject({ state: 'watching', failures: 0, retryInMs: null, lastError: null })
    expect(rec.at('warn')).toHaveLength(1)
    expect(rec.at('warn')[0].fields).toMatchObject({ namespace: 'hangar', retryInMs: 20, failures: 1 })
    expect(String(rec.at('warn')[0].fields.error)).toMatch(/500/)
    expect(rec.at('info').map((l) => l.message)).toEqual(['Pod watch recovered'])
    expect(rec.at('info')[0].fields).toMatchObject({ failures: 6 })

    // A healthy watch that then fails waits the first wait again, and the new run is logged once more.
    waits.length = 0
    const again = request(api, (k) => k === 'watch')
    api.failWatches(500, 'etcdserver: request timed out')
    await again
    expect(waits).toEqual([20])
    expect(rec.at('warn')).toHaveLength(2)
    expect(String(rec.at('warn')[1].fields.error)).toMatch(/etcdserver: request timed out/)
  })

  it('takes a watch with no event or bookmark for stallMs as stalled and starts again from a fresh list', async () => {
    const { w, rec } = await start({ stallMs: 300 })
    api.watchPlan.push('silent')
    await w.ready()
    await expect.poll(() => api.openWatches()).toBe(1)
    // The silent watch misses this Pod; only a fresh list finds it.
    const found = next<V1Pod | null>(
      (l) => w.on('d', l),
      (p) => p !== null,
    )
    api.putPod(fakePod('d'), { quietly: true })
    await found
    const kinds = api.requests.filter((r) => r.kind !== 'other').map((r) => r.kind)
    expect(kinds.slice(0, 3)).toEqual(['list', 'watch', 'list'])
    expect(rec.at('warn')).toHaveLength(1)
    expect(String(rec.at('warn')[0].fields.error)).toMatch(/watch stalled: no event or bookmark/)
    // The stalled request was ended by the client, not left open beside the new one.
    await expect.poll(() => api.openWatches()).toBe(1)
  })

  it('keeps a watch that brings bookmarks: they are events enough', async () => {
    const { w, rec } = await start({ stallMs: 600 })
    await w.ready()
    await expect.poll(() => api.openWatches()).toBe(1)
    // Bookmarks every 100 ms for three stall periods: no restart (asserting an absence needs the time to pass).
    for (let i = 0; i < 18; i++) {
      api.bookmark()
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(api.requests.filter((r) => r.kind === 'list')).toHaveLength(1)
    expect(rec.at('warn')).toEqual([])
  })

  it('lists again after 410 Gone and reports the Pods deleted meanwhile as deleted', async () => {
    const { w, rec } = await start()
    api.putPod(fakePod('e'))
    await w.ready()
    await expect.poll(() => api.openWatches()).toBe(1)
    // An event makes the watch healthy; then it misses a delete and an add, and its resourceVersion expires.
    const seen = next<V1Pod | null>(
      (l) => w.on('f', l),
      (p) => p !== null,
    )
    api.putPod(fakePod('f'))
    await seen
    const gone = next<V1Pod | null>(
      (l) => w.on('e', l),
      (p) => p === null,
    )
    const added = next<V1Pod | null>(
      (l) => w.on('g', l),
      (p) => p !== null,
    )
    api.deletePod('e', { quietly: true })
    api.putPod(fakePod('g'), { quietly: true })
    api.failWatches(410, 'too old resource version')
    await gone
    await added
    expect(api.requests.filter((r) => r.kind === 'list')).toHaveLength(2)
    // Expiry is routine: no failure, no wait, no log line.
    expect(rec.lines).toEqual([])
    expect(w.status().failures).toBe(0)
  })

  it('waits before watching again when a watch answers 410 right after a fresh list (no list-watch spin)', async () => {
    const { w, rec } = await start()
    api.watchPlan.push('gone', 'gone', 'gone')
    const waits: Array<number | null> = []
    api.onRequest = (r) => {
      if (r.kind === 'list') waits.push(w.status().retryInMs)
    }
    await w.ready()
    await expect.poll(() => api.openWatches(), { timeout: 10_000 }).toBe(1)
    expect(waits).toEqual([null, 20, 40, 80])
    expect(rec.at('warn')).toHaveLength(1)
  })
})

describe('KubernetesDriver when its Pods cannot be listed', () => {
  it('fails a start saying why, before it makes anything', async () => {
    const api = await startKubeApiServer('hangar')
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-k8s-watch-'))
    const rec = recordingLog()
    const driver = new KubernetesDriver({
      config: parseConfig({ runtime: { kubernetes: { namespace: 'hangar' } } }).runtime!.kubernetes!,
      dataDir,
      kubeConfig: api.kubeConfig(),
      log: rec.log,
    })
    try {
      api.listFaults.push(403)
      const spec: WorkloadSpec = {
        id: 'w1',
        kind: 'worker',
        hostId: 'k8s-cpu',
        labels: {},
        image: 'localhost/bb:latest',
        entrypoint: [],
        cmd: [],
        env: {},
        gpus: { ids: [], virtual: false },
        resources: { vcpus: 1, memoryGb: 1 },
        mounts: [],
        ports: [],
      }
      await expect(driver.start(spec)).rejects.toThrow(
        /cannot watch the Pods of namespace hangar .*: cannot list the Pods: HTTP 403: pods is forbidden/,
      )
      expect(api.requests.map((r) => `${r.method} ${r.kind}`)).toEqual(['GET list'])
    } finally {
      await driver.close()
      await api.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('KubernetesDriver removing many workloads at once', () => {
  it(`sends at most ${DELETES_AT_ONCE} Pod deletions at once, and removes every Pod`, async () => {
    const api = await startKubeApiServer('hangar')
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-k8s-deletes-'))
    const driver = new KubernetesDriver({
      config: parseConfig({ runtime: { kubernetes: { namespace: 'hangar' } } }).runtime!.kubernetes!,
      dataDir,
      kubeConfig: api.kubeConfig(),
      log: recordingLog().log,
    })
    try {
      // An endpoint of 200 workers deleted: its workers' Pods are removed together.
      const names = Array.from({ length: 200 }, (_, i) => `hangar-worker-w${i}`)
      for (const name of names) api.putPod(fakePod(name, 'Running'))
      await Promise.all(names.map((name) => driver.remove(`kubernetes:k8s-cpu:${name}`)))
      expect(api.podDeletes.most).toBeGreaterThan(1)
      expect(api.podDeletes.most).toBeLessThanOrEqual(DELETES_AT_ONCE)
      const deleted = api.requests.filter((r) => r.method === 'DELETE' && r.path.includes('/pods/'))
      expect(deleted).toHaveLength(names.length)
      const left = await api.kubeConfig().makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'hangar' })
      expect(left.items).toEqual([])
    } finally {
      await driver.close()
      await api.close()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
