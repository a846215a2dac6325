import { existsSync } from 'node:fs'
import { KubeConfig, VersionApi } from '@kubernetes/client-node'
import { Pool } from 'undici'
import { FleetServer } from '../fleet/FleetServer.js'
import { KubeApiProxy } from '../fleet/KubeApiProxy.js'
import { VirtualNodes } from '../fleet/VirtualNodes.js'
import { VirtualWorkers } from '../fleet/VirtualWorkers.js'
import { percentile, round, sleep, until, type BenchContext, type Row } from '../lib.js'

/** Where CI's Kubernetes stage builds and starts its single-node cluster (.ci/setup-kubernetes.sh). */
const CACHED_KUBECONFIG = '/var/cache/hangar-k8s/pki/admin.kubeconfig'
/** The GPU label value of the virtual Nodes, and the catalog type Hangar maps it to (pool ADA_24). */
const PRODUCT = 'NVIDIA-GeForce-RTX-4090'
const GPU_TYPE = 'NVIDIA GeForce RTX 4090'

/** Sizes of the scenario. */
export interface KubernetesFleetSize {
  nodes: number
  /** Worker Pods, each of one GPU, spread over `endpoints` endpoints (min = max). */
  pods: number
  endpoints: number
}

/**
 * The fleet on a real Kubernetes (issue 35): Hangar on its Kubernetes runtime, as the e2e tests configure it,
 * over the single-node cluster with `nodes` virtual Nodes of 8 GPUs (bench/fleet/VirtualNodes.ts); the
 * scheduler and the API server are the real ones. Hangar talks to the API server through a counting proxy
 * (bench/fleet/KubeApiProxy.ts). Reported: time to place `pods` warm workers from their endpoints' creation,
 * watch lag (Running sent by the Nodes' controller -> the event handed to Hangar), one capacity refresh's
 * cost, API requests per second while placing and while idle, a job per worker run exactly once, and the
 * control plane's CPU, RSS and event-loop lag. Runs only when a cluster answers (HANGAR_TEST_KUBECONFIG, or the
 * cluster CI's Kubernetes stage leaves in /var/cache/hangar-k8s); otherwise one row says why it was skipped.
 */
export async function kubernetesFleet(ctx: BenchContext, o: KubernetesFleetSize, nodeArgs: string[]): Promise<Row[]> {
  const w = `fleet kubernetes ${o.pods} Pods/${o.nodes} nodes`
  const found = await findCluster()
  if ('skip' in found) {
    console.log(`fleet kubernetes: skipped: ${found.skip}`)
    return [{ workload: 'fleet kubernetes', metric: 'skipped', value: 0, unit: '', note: found.skip }]
  }
  const kc = found.kc
  const namespace = process.env.HANGAR_TEST_K8S_NAMESPACE ?? 'default'
  const workers = new VirtualWorkers({ jobMs: 1_000 })
  const proxy = await KubeApiProxy.start(kc)
  const nodes = await VirtualNodes.open({ kubeConfig: kc, workers, namespace })
  let s: FleetServer | undefined
  try {
    const t0 = performance.now()
    await nodes.add({ prefix: 'fleet', count: o.nodes, gpus: 8, gpuProduct: PRODUCT })
    const registerMs = performance.now() - t0
    s = await FleetServer.start({
      hosts: 0,
      kubernetes: true,
      workers,
      nodeArgs,
      config: {
        runtime: {
          kubernetes: {
            kubeconfig: proxy.kubeconfig,
            namespace,
            hostNetwork: true,
            imagePullPolicy: 'Never',
            networkVolumes: 'hostPath',
            oversubscription: 8,
            gpuTypes: { [PRODUCT]: GPU_TYPE },
          },
        },
      },
    })
    const made = await setUp(s, o)
    await sleep(500)
    s.resetStats()
    proxy.reset()

    // Placement: every endpoint asks for its warm workers at once.
    const tPlace = performance.now()
    let podsRunningMs = Number.NaN
    // Starts in flight: Pods Hangar created that are not Running yet (each start awaits its Pod running).
    let inFlight = 0
    const sampler = setInterval(() => {
      if (Number.isNaN(podsRunningMs) && nodes.stats.started >= o.pods) podsRunningMs = performance.now() - tPlace
      inFlight = Math.max(inFlight, (proxy.counts.get('POST pods (collection)') ?? 0) - nodes.stats.started)
    }, 50)
    try {
      for (const id of made.ids) {
        const r = await s.api('PATCH', `/v2/serverless/${id}`, { workers: { min: made.per, max: made.per } }, made.key)
        if (r.status !== 200) throw new Error(`scale endpoint: ${r.status} ${JSON.stringify(r.body)}`)
      }
      await until(`${o.pods} worker Pods Running`, () => nodes.stats.started >= o.pods, 1_800_000, 200)
      if (Number.isNaN(podsRunningMs)) podsRunningMs = performance.now() - tPlace
      await until(`Hangar handed ${o.pods} Running events`, () => seenAll(nodes, proxy, o.pods), 300_000, 200)
    } finally {
      clearInterval(sampler)
    }
    const seenMs = performance.now() - tPlace
    // Ready in Hangar: each worker booted (the SDK's 0.5-2 s) and called in.
    let ready = 0
    await until(
      `${o.pods} workers ready in Hangar`,
      async () => (ready = await readyWorkers(s!, made)) >= o.pods,
      120_000,
      1_000,
    ).catch(() => undefined)
    const readyMs = performance.now() - tPlace
    const place = await s.stats()
    const placeApi = proxy.totals()
    const placeTop = top(proxy.counts)
    const lags = [...nodes.runningAt]
      .map(([pod, at]) => (proxy.runningSeen.get(pod) ?? Number.NaN) - at)
      .filter((x) => !Number.isNaN(x))
      .sort((a, b) => a - b)

    // Idle: the placed fleet, nothing queued; the capacity refresh runs on its interval (30 s).
    s.resetStats()
    proxy.reset()
    const calls = { takes: workers.stats.takes, pings: workers.stats.pings, at: performance.now() }
    await sleep(ctx.quick ? 5_000 : 60_000)
    const idleS = (performance.now() - calls.at) / 1000
    const takesPerS = (workers.stats.takes - calls.takes) / idleS
    const pingsPerS = (workers.stats.pings - calls.pings) / idleS
    const idle = await s.stats()
    const idleApi = proxy.totals()
    const idleTop = top(proxy.counts)
    const refresh = await s.refreshCost()
    const lists = proxy.lists.filter((l) => l.key.startsWith('GET pods') || l.key.startsWith('GET nodes'))

    // One job per worker: each is run once.
    const jobs = await oneJobEach(s, made, o.pods)
    const dup = workers.duplicates()
    const rows: Row[] = [
      {
        workload: w,
        metric: 'virtual Nodes registered',
        value: round(registerMs / 1000, 1),
        unit: 's',
        note: `${o.nodes} Nodes x 8 GPUs, Ready and untainted; ${nodes.stats.writes} writes so far by their controller`,
      },
      {
        workload: w,
        metric: `time to ${o.pods} Pods Running`,
        value: round(podsRunningMs / 1000, 1),
        unit: 's',
        note: `from the endpoints' scale-up (${made.ids.length} endpoints x ${made.per}) to the Nodes' controller marking the last Running; Hangar handed every Running event at ${round(seenMs / 1000, 1)} s; at most ${inFlight} Pods created and not yet Running at once`,
      },
      {
        workload: w,
        metric: `time to ${o.pods} workers ready`,
        value: round(readyMs / 1000, 1),
        unit: 's',
        note: `${ready} idle or running in Hangar's health of the endpoints (polled each second), each worker having booted (0.5-2 s, as the SDK) and called in`,
      },
      {
        workload: w,
        metric: 'watch lag p50',
        value: round(percentile(lags, 50), 1),
        unit: 'ms',
        note: `Running status sent by the Nodes' controller -> the event passed to Hangar's watch; p99 ${round(percentile(lags, 99), 1)} ms, max ${round(lags[lags.length - 1] ?? Number.NaN)} ms, ${lags.length} Pods`,
      },
      {
        workload: w,
        metric: 'API requests while placing',
        value: round(placeApi.perS, 1),
        unit: '/s',
        note: `${placeApi.requests} in ${round(placeApi.seconds)} s: ${placeTop}`,
      },
      ...statRows(w, 'placing', place),
      {
        workload: w,
        metric: 'capacity refresh',
        value: round(refresh.ms),
        unit: 'ms',
        note: `one read of ${o.nodes + 1} Nodes and every Pod, ${round(refresh.cpuMs)} ms of the control plane's CPU; its lists through the proxy: ${lists.map((l) => `${l.key} ${round(l.ms)} ms ${round(l.bytes / 1024)} KiB`).join(', ') || 'none'}`,
      },
      {
        workload: w,
        metric: 'API requests idle',
        value: round(idleApi.perS, 2),
        unit: '/s',
        note: `${idleApi.requests} in ${round(idleApi.seconds)} s: ${idleTop}`,
      },
      ...statRows(w, 'idle', idle).map((r) =>
        r.metric.startsWith('control-plane CPU')
          ? { ...r, note: `${r.note}; workers' job-takes ${round(takesPerS, 1)}/s, pings ${round(pingsPerS, 1)}/s` }
          : r,
      ),
      {
        workload: w,
        metric: 'jobs run exactly once',
        value: dup.taken - dup.twice.length,
        unit: 'jobs',
        goal: `${o.pods}`,
        met: dup.twice.length === 0 && dup.taken === o.pods && jobs.refused === 0,
        note: `one job of 1 s per worker, drained in ${round(jobs.ms / 1000, 1)} s; ${dup.twice.length} twice, ${o.pods - dup.taken} never, ${jobs.refused} refused; worker errors ${workers.stats.errors}${workers.stats.firstError ? ` (${workers.stats.firstError})` : ''}; Nodes' controller errors ${nodes.stats.errors}${nodes.stats.firstError ? ` (${nodes.stats.firstError})` : ''}`,
      },
    ]
    const tDown = performance.now()
    for (const id of made.ids) await s.api('DELETE', `/v2/serverless/${id}`, undefined, made.key)
    await until('the worker Pods deleted', () => workers.size === 0, 300_000, 200).catch((err) =>
      console.error(`fleet kubernetes: ${(err as Error).message}: ${workers.size} workers left`),
    )
    console.error(
      `fleet kubernetes: endpoints deleted, workers ended in ${round((performance.now() - tDown) / 1000, 1)} s`,
    )
    return rows
  } finally {
    const t = performance.now()
    await s?.stop()
    console.error(`fleet kubernetes: control plane stopped in ${round((performance.now() - t) / 1000, 1)} s`)
    await nodes.close()
    await proxy.close()
    await workers.close()
  }
}

/** The cluster to run on, or why there is none. */
async function findCluster(): Promise<{ kc: KubeConfig } | { skip: string }> {
  const file = process.env.HANGAR_TEST_KUBECONFIG ?? (existsSync(CACHED_KUBECONFIG) ? CACHED_KUBECONFIG : undefined)
  if (!file) return { skip: `no cluster: HANGAR_TEST_KUBECONFIG is not set and ${CACHED_KUBECONFIG} does not exist` }
  if (!existsSync(file)) return { skip: `no cluster: kubeconfig ${file} does not exist` }
  const kc = new KubeConfig()
  kc.loadFromFile(file)
  try {
    await Promise.race([
      kc.makeApiClient(VersionApi).getCode(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no answer in 5 s')), 5_000).unref()),
    ])
    return { kc }
  } catch (err) {
    return { skip: `the API server of ${file} does not answer (${(err as Error).message})` }
  }
}

/** An account and its GPU endpoints, made with no workers (the placement is timed from their scale-up). */
async function setUp(s: FleetServer, o: KubernetesFleetSize) {
  await s.api('POST', '/v2/admin/accounts', { name: 'fleet-k8s', rateLimitExempt: true })
  const key = (await s.api('POST', '/v2/admin/keys', { account: 'fleet-k8s', permission: 'ALL' })).body.key as string
  const per = Math.ceil(o.pods / o.endpoints)
  const ids: string[] = []
  for (let i = 0; i < o.endpoints; i++) {
    const r = await s.api(
      'POST',
      '/v2/serverless',
      {
        name: `fleet-k8s-${i}`,
        type: 'QUEUE',
        image: 'sim/worker:latest',
        gpu: { pools: ['ADA_24'], count: 1 },
        scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
        workers: { min: 0, max: per, idleTimeout: 600 },
      },
      key,
    )
    if (r.status !== 201) throw new Error(`create endpoint: ${r.status} ${JSON.stringify(r.body)}`)
    ids.push(r.body.id)
  }
  return { key, ids, per }
}

/** Whether Hangar's watch was handed a Running event of every Pod the Nodes' controller ran. */
function seenAll(nodes: VirtualNodes, proxy: KubeApiProxy, pods: number): boolean {
  let n = 0
  for (const pod of nodes.runningAt.keys()) if (proxy.runningSeen.has(pod)) n++
  return n >= pods
}

/** Workers Hangar counts as ready or running, over the endpoints (once every Pod is seen). */
async function readyWorkers(s: FleetServer, made: { key: string; ids: string[] }): Promise<number> {
  let n = 0
  for (const id of made.ids) {
    const h = (await s.api('GET', `/v2/${id}/health`, undefined, made.key)).body
    n += (h?.workers?.idle ?? 0) + (h?.workers?.running ?? 0)
  }
  return n
}

/** Submits `count` jobs spread over the endpoints and waits until the workers have posted each result. */
async function oneJobEach(s: FleetServer, made: { key: string; ids: string[] }, count: number) {
  const pool = new Pool(s.url, { connections: 16 })
  const headers = { authorization: `Bearer ${made.key}`, 'content-type': 'application/json' }
  const t0 = performance.now()
  let refused = 0
  let next = 0
  try {
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < count) {
          const i = next++
          const res = await pool.request({
            path: `/v2/${made.ids[i % made.ids.length]}/run`,
            method: 'POST',
            headers,
            body: JSON.stringify({ input: { i } }),
          })
          await res.body.text()
          if (res.statusCode !== 200) refused++
        }
      }),
    )
    await until(`${count} jobs done`, () => s.workers.stats.dones >= count - refused, 300_000, 100)
  } finally {
    await pool.close()
  }
  return { refused, ms: performance.now() - t0 }
}

/** The five commonest requests: `GET pods (watch) 1, POST pods 2000, ...`. */
function top(counts: Map<string, number>): string {
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 6)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ')
}

function statRows(w: string, phase: string, st: Awaited<ReturnType<FleetServer['stats']>>): Row[] {
  return [
    {
      workload: w,
      metric: `control-plane CPU ${phase}`,
      value: round(st.cores, 3),
      unit: 'cores',
      note: `over ${round(st.seconds)} s; RSS ${round(st.rssMb)} MiB; ${round(st.statementsPerS)} store statements/s; scaling pass p99 ${round(st.passP99Ms, 1)} ms (${st.passes} passes)`,
    },
    {
      workload: w,
      metric: `event-loop lag p99 ${phase}`,
      value: round(st.lagP99Ms, 1),
      unit: 'ms',
      note: `max ${round(st.lagMaxMs)} ms`,
    },
  ]
}
