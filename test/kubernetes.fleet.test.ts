import { CoreV1Api, type V1Pod } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { VirtualNodes } from '../bench/fleet/VirtualNodes.js'
import { VirtualWorkers } from '../bench/fleet/VirtualWorkers.js'
import { LABELS } from '../src/runtime/labels.js'
import { createEndpoint, jobCall, waitFinal } from './helpers/endpoints.js'
import { kubeEnv, kubernetesSkipReason, testKubeConfig } from './helpers/kubernetes.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const skip = await kubernetesSkipReason()
if (skip) console.warn(skip)

/** GPU label values of the virtual Nodes: one model whose Nodes never start a Pod, one whose Nodes do. */
const STUCK = 'NVIDIA-A100-SXM4-80GB'
const RUNS = 'NVIDIA-H100-80GB-HBM3'

/**
 * As the e2e tests configure the cluster (host networking, no pulls, no capacity refresh during a test), with
 * the virtual Nodes' GPU labels mapped to catalog types: A100 (pool AMPERE_80) and H100 (pool ADA_80_PRO).
 */
const kubernetes = {
  kubeconfig: kubeEnv.kubeconfig,
  namespace: kubeEnv.namespace,
  hostNetwork: true,
  imagePullPolicy: 'Never',
  networkVolumes: 'hostPath',
  oversubscription: 8,
  capacityRefreshMs: 3_600_000,
  gpuTypes: { [STUCK]: 'NVIDIA A100-SXM4-80GB', [RUNS]: 'NVIDIA H100 80GB HBM3' },
}

const gpuEndpoint = (name: string, pool: string, workers: { min: number; max: number }) => ({
  name,
  type: 'QUEUE',
  image: 'sim/worker:latest',
  gpu: { pools: [pool], count: 1 },
  scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
  workers: { ...workers, idleTimeout: 600 },
})

/**
 * Hangar's Kubernetes runtime, the API server and the scheduler are the real ones; the Nodes are virtual
 * (bench/fleet/VirtualNodes.ts): 1 Node of 8 A100s whose Pods stay Pending (an image pull that never ends) and
 * 10 Nodes of 8 H100s whose Pods run a virtual worker speaking the Python SDK's protocol.
 */
describe.skipIf(skip !== null)('worker Pods on virtual GPU Nodes of a real Kubernetes', () => {
  const api = () => testKubeConfig().makeApiClient(CoreV1Api)
  let s: TestServer
  let workers: VirtualWorkers
  let nodes: VirtualNodes
  const live = async (selector: string): Promise<V1Pod[]> =>
    (await api().listNamespacedPod({ namespace: kubeEnv.namespace, labelSelector: selector })).items.filter(
      (p) => !p.metadata?.deletionTimestamp,
    )
  const podsOf = (ep: string) => live(`${LABELS.endpoint}=${ep}`)
  const removeEndpoint = async (ep: string) => {
    expect((await s.api('DELETE', `/v2/serverless/${ep}`)).status).toBeLessThan(300)
    await until(async () => (await podsOf(ep)).length === 0, 30_000, `the Pods of ${ep} deleted`)
  }

  beforeAll(async () => {
    workers = new VirtualWorkers({ jobMs: 200, bootMs: [0, 200] })
    nodes = await VirtualNodes.open({ kubeConfig: testKubeConfig(), workers, namespace: kubeEnv.namespace })
    await nodes.add({ prefix: 'stuck', count: 1, gpus: 8, gpuProduct: STUCK, stuck: true })
    await nodes.add({ prefix: 'gpu', count: 10, gpus: 8, gpuProduct: RUNS })
    // Hangar reads the Nodes once, at its start (no refresh during the test). Pings each 30 s: a worker is
    // taken as lost by its silence only after 90 s, so a replacement sooner came from the Pod's deletion.
    s = await startTestServer({ jobs: { pingIntervalMs: 30_000 }, runtime: { kubernetes } })
  }, 180_000)
  afterAll(async () => {
    // Hangar's own Pods outlive it by design; every one of them is on a virtual Node, which close() clears,
    // also after a stop that failed or hung (the cluster is shared: no Node may be left behind).
    try {
      await Promise.race([s?.stop(), new Promise((r) => setTimeout(r, 60_000))])
    } finally {
      await nodes?.close()
      await workers?.close()
    }
  }, 150_000)

  it("a GPU worker whose Pod its node never starts holds up no other endpoint's scale-up", async () => {
    const stuck = await createEndpoint(s, gpuEndpoint('fleet-stuck', 'AMPERE_80', { min: 0, max: 1 }))
    const held = (await jobCall(s, 'POST', `/v2/${stuck.id}/run`, { input: { n: 1 } })).body.id as string
    const pending = await until(
      async () =>
        (await podsOf(stuck.id)).find(
          (p) =>
            p.spec?.nodeName?.startsWith(`stuck-${nodes.run}-`) &&
            p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ContainerCreating',
        ),
      30_000,
      "the A100 worker's Pod bound to the stuck Node, its container being created",
    )

    const other = await createEndpoint(s, gpuEndpoint('fleet-other', 'ADA_80_PRO', { min: 0, max: 1 }))
    const job = (await jobCall(s, 'POST', `/v2/${other.id}/run`, { input: { n: 2 } })).body.id as string
    const done = await waitFinal(s, other.id, job, 45_000)
    expect(done.status, JSON.stringify(done)).toBe('COMPLETED')
    expect(done.output).toMatchObject({ ok: true })

    // Meanwhile the first endpoint's start still waits on its Pod, and its job on it.
    expect((await jobCall(s, 'GET', `/v2/${stuck.id}/status/${held}`)).body.status).toBe('IN_QUEUE')
    const [still] = await podsOf(stuck.id)
    expect(still.metadata?.uid).toBe(pending.metadata?.uid)
    expect(still.status?.phase).toBe('Pending')
    await removeEndpoint(stuck.id)
    await removeEndpoint(other.id)
  }, 120_000)

  describe('30 warm workers on 10 Nodes of 8 GPUs', () => {
    const eps: string[] = []
    const onRunNodes = async () =>
      (await live('app.kubernetes.io/managed-by=hangar')).filter(
        (p) => p.spec?.nodeName?.startsWith(`gpu-${nodes.run}-`) && p.status?.phase === 'Running',
      )
    const runJobs = async (count: number) => {
      const ids: { ep: string; id: string }[] = []
      for (let i = 0; i < count; i++) {
        const ep = eps[i % eps.length]
        ids.push({ ep, id: (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { i } })).body.id })
      }
      for (const j of ids) expect((await waitFinal(s, j.ep, j.id, 30_000)).status).toBe('COMPLETED')
      // Each was taken by a worker exactly once.
      expect(ids.filter((j) => workers.executions.get(j.id)?.length !== 1)).toEqual([])
    }
    afterAll(async () => {
      for (const ep of eps) await s.api('DELETE', `/v2/serverless/${ep}`)
      for (const ep of eps)
        await until(async () => (await podsOf(ep)).length === 0, 30_000, `the Pods of ${ep} deleted`)
    }, 90_000)

    it("places every worker as a Pod the scheduler bound within the Nodes' GPUs, and runs every job once", async () => {
      for (let i = 0; i < 3; i++)
        eps.push((await createEndpoint(s, gpuEndpoint(`fleet-warm-${i}`, 'ADA_80_PRO', { min: 10, max: 10 }))).id)
      const pods = await until(
        async () => {
          const p = await onRunNodes()
          return p.length === 30 ? p : undefined
        },
        90_000,
        '30 worker Pods Running on the H100 Nodes',
      )
      const perNode = new Map<string, number>()
      for (const p of pods) {
        expect(p.spec?.containers[0].resources?.limits).toMatchObject({ 'nvidia.com/gpu': '1' })
        perNode.set(p.spec!.nodeName!, (perNode.get(p.spec!.nodeName!) ?? 0) + 1)
      }
      expect(Math.max(...perNode.values())).toBeLessThanOrEqual(8)
      await until(
        async () => {
          let ready = 0
          for (const ep of eps) {
            const w = (await s.api('GET', `/v2/${ep}/health`)).body.workers
            ready += w.idle + w.running
          }
          return ready === 30
        },
        30_000,
        'Hangar counting 30 ready workers',
      )
      await runJobs(90)
    }, 180_000)

    it('replaces the workers of a failed Node on the others, and they run the next jobs', async () => {
      const before = await onRunNodes()
      expect(before).toHaveLength(30)
      const counts = new Map<string, number>()
      for (const p of before) counts.set(p.spec!.nodeName!, (counts.get(p.spec!.nodeName!) ?? 0) + 1)
      const victim = [...counts].sort((a, b) => b[1] - a[1])[0][0]
      const lost = await nodes.fail(victim, { removeNode: true })
      expect(lost.length).toBeGreaterThan(0)
      // From the Pods' deletion, well before the 90 s the lost workers' missing pings would take.
      const after = await until(
        async () => {
          const p = await onRunNodes()
          return p.length === 30 && p.every((x) => !lost.includes(x.metadata!.name!)) ? p : undefined
        },
        60_000,
        `the ${lost.length} Pods of the failed Node replaced`,
      )
      expect(after.some((p) => p.spec?.nodeName === victim)).toBe(false)
      await runJobs(30)
    }, 120_000)
  })
})
