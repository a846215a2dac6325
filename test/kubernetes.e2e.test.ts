import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CoreV1Api, setHeaderOptions, type V1Pod } from '@kubernetes/client-node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../src/runtime/freePort.js'
import { LABELS } from '../src/runtime/labels.js'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { createPod, readPodLogs, terminateAll, waitPod } from './helpers/pods.js'
import { kubeEnv, kubernetesSkipReason, testKubeConfig } from './helpers/kubernetes.js'
import { serveWithConfig } from './helpers/process.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const skip = await kubernetesSkipReason()
if (skip) console.warn(skip)

/**
 * What this single-node test cluster needs besides the one line that names the cluster: no pod network (host
 * networking), images imported into containerd (never pulled), a node of 2 CPUs (requests are an eighth of the
 * flavor's limits), and no capacity refresh during a test (the GPU test changes the cluster under it).
 */
const kubernetes = {
  kubeconfig: kubeEnv.kubeconfig,
  namespace: kubeEnv.namespace,
  hostNetwork: true,
  imagePullPolicy: 'Never',
  networkVolumes: 'hostPath',
  oversubscription: 8,
  capacityRefreshMs: 3_600_000,
}

describe.skipIf(skip !== null)('endpoints on a real Kubernetes: every worker is a Pod', () => {
  const api = () => testKubeConfig().makeApiClient(CoreV1Api)
  /** Pods outlive the control plane by design: whatever a test server of this file left is deleted after it. */
  const stopAndClean = async (t: TestServer | undefined) => {
    if (!t) return
    const installation = readFileSync(join(t.dataDir, 'installation-id'), 'utf8').trim()
    await t.stop()
    const left = (
      await api().listNamespacedPod({
        namespace: kubeEnv.namespace,
        labelSelector: `${LABELS.installation}=${installation}`,
      })
    ).items
    for (const p of left)
      await api()
        .deleteNamespacedPod({ name: p.metadata!.name!, namespace: kubeEnv.namespace, gracePeriodSeconds: 0 })
        .catch(() => undefined)
  }
  const podsOf = async (ep: string): Promise<V1Pod[]> =>
    (
      await api().listNamespacedPod({ namespace: kubeEnv.namespace, labelSelector: `${LABELS.endpoint}=${ep}` })
    ).items.filter((p) => !p.metadata?.deletionTimestamp)

  describe('a queue endpoint', () => {
    let s: TestServer
    beforeAll(async () => {
      s = await startTestServer({ runtime: { kubernetes } })
    }, 60_000)
    afterAll(async () => {
      await stopAndClean(s)
    })

    it("has its jobs completed by a worker in a Pod with the flavor's resources, and its Pod deleted with it", async () => {
      // The fleet is the cluster: node1 (no GPU label) is the host `k8s`, 2 CPUs x 8.
      const ep = (
        await createEndpoint(
          s,
          endpointBody(kubeEnv.workerImage, { name: 'k8s-queue', workers: { min: 0, max: 1, idleTimeout: 60 } }),
        )
      ).id
      const first = (await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: { hello: 'kubernetes' } })).body
      expect(first).toMatchObject({
        status: 'COMPLETED',
        output: { echo: { hello: 'kubernetes' }, disk: '/workspace' },
      })
      const second = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { n: 2 } })).body
      expect((await waitFinal(s, ep, second.id)).output).toMatchObject({ echo: { n: 2 } })

      const list = (await s.api('GET', `/v2/serverless/${ep}/workers`)).body
      expect(list.workers).toHaveLength(1)
      expect(list.workers[0], JSON.stringify(list.workers[0])).toMatchObject({
        id: first.workerId,
        runtime: 'kubernetes',
        hostId: 'k8s',
        startPhase: null,
      })
      const pods = await podsOf(ep)
      expect(pods).toHaveLength(1)
      const pod = pods[0]
      expect(pod.status?.phase).toBe('Running')
      expect(pod.metadata?.labels).toMatchObject({
        [LABELS.kind]: 'worker',
        [LABELS.id]: first.workerId,
        [LABELS.release]: '1',
        [LABELS.host]: 'k8s',
        'app.kubernetes.io/managed-by': 'hangar',
      })
      const c = pod.spec!.containers[0]
      expect(c.image).toBe(kubeEnv.workerImage)
      // cpu3c x 2 vCPUs: 2 CPUs and 4 GB as limits, an eighth of them requested (oversubscription 8).
      expect(c.resources).toEqual({ limits: { cpu: '2', memory: '4Gi' }, requests: { cpu: '250m', memory: '512Mi' } })
      expect(pod.spec!.volumes?.find((v) => v.emptyDir)?.emptyDir).toMatchObject({
        sizeLimit: expect.stringMatching(/Gi$/),
      })
      expect(Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value]))).toMatchObject({
        RUNPOD_POD_ID: first.workerId,
        RUNPOD_ENDPOINT_ID: ep,
        RUNPOD_WEBHOOK_GET_JOB: expect.stringContaining(`/v2/${ep}/job-take/${first.workerId}`),
      })

      expect((await s.api('DELETE', `/v2/serverless/${ep}`)).status).toBeLessThan(300)
      await until(async () => (await podsOf(ep)).length === 0, 30_000, 'the Pod deleted')
    }, 120_000)

    it('has its jobs done by a Python worker on the unmodified runpod SDK in a Pod', async () => {
      const env = { HANDLER: 'plain', RUNPOD_SKIP_GPU_CHECK: 'true' }
      const ep = (
        await createEndpoint(
          s,
          endpointBody(kubeEnv.pythonImage, { name: 'k8s-python', env, workers: { min: 0, max: 1, idleTimeout: 60 } }),
        )
      ).id
      const first = (await jobCall(s, 'POST', `/v2/${ep}/runsync?wait=90000`, { input: { hello: 'python in a pod' } }))
        .body
      expect(first, JSON.stringify(first)).toMatchObject({
        status: 'COMPLETED',
        output: { echo: { hello: 'python in a pod' }, worker: first.workerId },
      })
      const failed = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { action: 'raise', message: 'no good' } }))
        .body
      const done = await waitFinal(s, ep, failed.id, 60_000)
      expect(done.status).toBe('FAILED')
      expect(JSON.parse(done.error as string)).toMatchObject({
        error_type: "<class 'ValueError'>",
        error_message: 'no good',
        worker_id: first.workerId,
      })
      const pods = await podsOf(ep)
      expect(pods.map((p) => p.spec!.containers[0].image)).toEqual([kubeEnv.pythonImage])
      expect((await s.api('DELETE', `/v2/serverless/${ep}`)).status).toBeLessThan(300)
      await until(async () => (await podsOf(ep)).length === 0, 30_000, 'the Pod deleted')
    }, 150_000)
  })

  describe('pods', () => {
    let s: TestServer
    beforeAll(async () => {
      // Network volumes as claims of the cluster's default storage class (hostPath here: one node, ReadWriteOnce).
      s = await startTestServer({
        jobs: { stopGraceMs: 2_000 },
        runtime: {
          kubernetes: {
            ...kubernetes,
            networkVolumes: 'pvc',
            networkVolumeAccessMode: 'ReadWriteOnce',
            networkVolumeSizeGb: 1,
          },
        },
      })
    }, 60_000)
    afterAll(async () => {
      if (s) await terminateAll(s)
      await stopAndClean(s)
    })
    const podsNamed = async (id: string) =>
      (await api().listNamespacedPod({ namespace: kubeEnv.namespace, labelSelector: `${LABELS.pod}=${id}` })).items

    it("serves a pod's declared port through the proxy", async () => {
      const created = await createPod(s, {
        name: 'k8s-http',
        image: kubeEnv.bbImage,
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        ports: ['8080/http'],
        entrypoint: [
          '/bin/sh',
          '-c',
          'mkdir -p /www && echo hello-from-a-pod > /www/index.html && exec httpd -f -p "$HANGAR_PORT_8080" -h /www',
        ],
      })
      const pod = await waitPod(s, created.id, 'RUNNING', undefined, 60_000)
      expect(pod.runtime.ports).toEqual([{ private: 8080, public: expect.any(Number), type: 'http', ip: '127.0.0.1' }])
      const body = await until(
        async () => {
          const r = await fetch(`${s.url}/proxy/${pod.id}/8080/index.html`, {
            headers: { authorization: `Bearer ${s.adminKey}` },
          })
          return r.status === 200 ? r.text() : undefined
        },
        20_000,
        'the port answering through the proxy',
      )
      expect(body).toBe('hello-from-a-pod\n')
      expect(await podsNamed(pod.id)).toHaveLength(1)
      expect((await s.api('DELETE', `/v2/pods/${pod.id}`)).status).toBe(204)
      await until(async () => (await podsNamed(pod.id)).length === 0, 30_000, 'the Pod deleted')
    }, 120_000)

    it('shares a network volume, a PersistentVolumeClaim, between two pods', async () => {
      const created = await s.api('POST', '/v2/network-volumes', {
        name: 'k8s-shared',
        size: 10,
        dataCenter: 'LOCAL-1',
      })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      const volume = created.body
      const body = (name: string, script: string) => ({
        name,
        image: kubeEnv.bbImage,
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        mounts: { network: [{ volumeId: volume.id, path: '/data' }] },
        entrypoint: ['/bin/sh', '-c', script],
      })
      const writer = await createPod(
        s,
        body('k8s-writer', 'echo "written by $RUNPOD_POD_ID" > /data/shared.txt; echo wrote; sleep 600'),
      )
      const reader = await createPod(
        s,
        body(
          'k8s-reader',
          'until [ -s /data/shared.txt ]; do sleep 0.2; done; echo "read: $(cat /data/shared.txt)"; sleep 600',
        ),
      )
      await waitPod(s, writer.id, 'RUNNING', undefined, 60_000)
      await waitPod(s, reader.id, 'RUNNING', undefined, 60_000)
      const events = await readPodLogs(s, reader.id, { match: /read: written by/, timeoutMs: 30_000 })
      expect(JSON.stringify(events)).toContain(`read: written by ${writer.id}`)
      const [w] = await podsNamed(writer.id)
      const [r] = await podsNamed(reader.id)
      const claimOf = (p: V1Pod) =>
        p.spec?.volumes?.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName
      expect(claimOf(w)).toEqual(expect.stringContaining(volume.id.toLowerCase().replace(/_/g, '-')))
      expect(claimOf(r)).toBe(claimOf(w))
      await terminateAll(s)
      // The claim outlives the pods (it is the volume's); deleting the volume does not delete it yet.
      await api().deleteNamespacedPersistentVolumeClaim({ name: claimOf(w)!, namespace: kubeEnv.namespace })
    }, 120_000)
  })

  describe('a GPU the scheduler cannot place', () => {
    let s: TestServer
    const foreign = `gpu-holder-${Date.now()}`
    const patchNode = (ops: unknown[]) =>
      api().patchNodeStatus(
        { name: 'node1', body: ops },
        setHeaderOptions('Content-Type', 'application/json-patch+json'),
      )
    const patchLabels = (ops: unknown[]) =>
      api().patchNode({ name: 'node1', body: ops }, setHeaderOptions('Content-Type', 'application/json-patch+json'))

    beforeAll(async () => {
      // No GPU here: node1 is given 2 `nvidia.com/gpu` of capacity and the GPU label (Kubernetes' documented way
      // to advertise an extended resource), before Hangar reads the fleet.
      await patchNode([{ op: 'add', path: '/status/capacity/nvidia.com~1gpu', value: '2' }])
      await patchLabels([{ op: 'add', path: '/metadata/labels/nvidia.com~1gpu.product', value: 'NVIDIA-L4' }])
      await until(
        async () => (await api().readNode({ name: 'node1' })).status?.allocatable?.['nvidia.com/gpu'] === '2',
        20_000,
        'node1 allocating 2 GPUs',
      )
      s = await startTestServer({ runtime: { kubernetes: { ...kubernetes, gpuTypes: { 'NVIDIA-L4': 'NVIDIA L4' } } } })
    }, 60_000)
    afterAll(async () => {
      for (const c of (await s?.api('GET', '/v2/clusters'))?.body?.clusters ?? [])
        await s.api('DELETE', `/v2/clusters/${c.id}`)
      await stopAndClean(s)
      await api()
        .deleteNamespacedPod({ name: foreign, namespace: kubeEnv.namespace, gracePeriodSeconds: 0 })
        .catch(() => undefined)
      await patchLabels([{ op: 'remove', path: '/metadata/labels/nvidia.com~1gpu.product' }]).catch(() => undefined)
      await patchNode([{ op: 'remove', path: '/status/capacity/nvidia.com~1gpu' }]).catch(() => undefined)
      await patchNode([{ op: 'remove', path: '/status/allocatable/nvidia.com~1gpu' }]).catch(() => undefined)
    }, 60_000)

    it('offers the GPUs of the Nodes in the catalog, shows an unschedulable Pod as NO_CAPACITY, and runs once the GPUs are free', async () => {
      const gpu = (await s.api('GET', '/v2/catalog/gpus/NVIDIA%20L4?include=AVAILABILITY&product=SERVERLESS')).body
      expect(gpu).toMatchObject({ availability: 'LOW', stock: { total: 2, free: 2 } })
      // Something else on the cluster takes both GPUs after Hangar read the fleet: its ledger still counts 2 free.
      await api().createNamespacedPod({
        namespace: kubeEnv.namespace,
        body: {
          metadata: { name: foreign },
          spec: {
            hostNetwork: true,
            restartPolicy: 'Never',
            containers: [
              {
                name: 'c',
                image: kubeEnv.bbImage,
                imagePullPolicy: 'Never',
                command: ['sleep', '600'],
                resources: { limits: { 'nvidia.com/gpu': '2' } },
              },
            ],
          },
        },
      })
      await until(
        async () =>
          (await api().readNamespacedPod({ name: foreign, namespace: kubeEnv.namespace })).spec?.nodeName === 'node1',
        20_000,
        'the GPU holder scheduled',
      )

      const ep = (
        await createEndpoint(
          s,
          endpointBody(kubeEnv.workerImage, {
            name: 'k8s-gpu',
            cpu: undefined,
            gpu: { pools: ['ADA_24'], count: 1 },
            workers: { min: 0, max: 1, idleTimeout: 60 },
          }),
        )
      ).id
      const job = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { on: 'gpu' } })).body
      const waiting = await until(
        async () => {
          const l = (await s.api('GET', `/v2/serverless/${ep}/workers`)).body
          return l.workers[0]?.lastError && l.waiting.reason?.code === 'NO_CAPACITY' ? l : undefined
        },
        30_000,
        'a worker waiting for the scheduler',
      )
      expect(waiting.workers[0]).toMatchObject({
        status: 'INITIALIZING',
        hostId: 'k8s-nvidia-l4',
        gpuTypeId: 'NVIDIA L4',
        lastError: expect.stringMatching(/^NO_CAPACITY: .*Insufficient nvidia\.com\/gpu/),
      })
      expect(waiting.waiting.reason.message).toMatch(/Insufficient nvidia\.com\/gpu/)
      const status = (await jobCall(s, 'GET', `/v2/${ep}/status/${job.id}`)).body
      expect(status).toMatchObject({
        status: 'IN_QUEUE',
        waitingReason: expect.stringMatching(/Insufficient nvidia\.com\/gpu/),
      })
      const [pending] = await podsOf(ep)
      expect(pending.spec?.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-L4' })
      expect(pending.spec?.containers[0].resources?.limits).toMatchObject({ 'nvidia.com/gpu': '1' })

      await api().deleteNamespacedPod({ name: foreign, namespace: kubeEnv.namespace, gracePeriodSeconds: 0 })
      expect((await waitFinal(s, ep, job.id)).status).toBe('COMPLETED')
      await s.api('DELETE', `/v2/serverless/${ep}`)
      await until(async () => (await podsOf(ep)).length === 0, 30_000, 'the Pod deleted')
    }, 120_000)

    it('runs a 2-member GPU cluster as Pods wired by env: rank 1 reaches rank 0 at MASTER_ADDR', async () => {
      // Host networking (this cluster has no pod network): members listen on their loopback block, as on one machine.
      const script = [
        'if [ "$NODE_RANK" = 0 ]; then',
        '  mkdir -p /www && echo "welcome from rank 0" > /www/index.html && exec httpd -f -p "$MASTER_ADDR:$MASTER_PORT" -h /www',
        'else',
        '  until msg=$(wget -qO- "http://$MASTER_ADDR:$MASTER_PORT/") && [ -n "$msg" ]; do sleep 0.2; done',
        '  echo "rank $NODE_RANK got: $msg"; sleep 600',
        'fi',
      ].join('\n')
      await until(
        async () =>
          (await s.api('GET', '/v2/catalog/gpus/NVIDIA%20L4?include=AVAILABILITY&product=POD')).body.stock?.free === 2,
        30_000,
        'both GPUs free',
      )
      const created = await s.api('POST', '/v2/clusters', {
        name: 'k8s-train',
        type: 'TRAINING',
        compute: { gpuTypeId: 'NVIDIA L4', gpuCountPerPod: 1, podCount: 2 },
        image: kubeEnv.bbImage,
        entrypoint: ['/bin/sh', '-c', script],
      })
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      const c = created.body
      await until(
        async () => (await s.api('GET', `/v2/clusters/${c.id}`)).body.pods.byStatus.RUNNING === 2,
        60_000,
        'both members RUNNING',
      )
      const [m0, m1] = (await s.api('GET', `/v2/clusters/${c.id}/pods`)).body.pods
      const got = await readPodLogs(s, m1.id, {
        query: 'tail=1000&source=container',
        match: /got: welcome/,
        timeoutMs: 30_000,
      })
      expect(got.at(-1)!.data.line).toBe('rank 1 got: welcome from rank 0')
      const pods = (
        await api().listNamespacedPod({ namespace: kubeEnv.namespace, labelSelector: `${LABELS.cluster}=${c.id}` })
      ).items
      expect(pods.map((p) => p.metadata?.labels?.[LABELS.clusterRank]).sort()).toEqual(['0', '1'])
      expect(pods.every((p) => p.spec?.containers[0].resources?.limits?.['nvidia.com/gpu'] === '1')).toBe(true)
      expect(m0.cluster).toMatchObject({ id: c.id, rank: 0 })
      expect((await s.api('DELETE', `/v2/clusters/${c.id}`)).status).toBeLessThan(300)
      await until(
        async () =>
          (
            await api().listNamespacedPod({ namespace: kubeEnv.namespace, labelSelector: `${LABELS.cluster}=${c.id}` })
          ).items.filter((p) => !p.metadata?.deletionTimestamp).length === 0,
        30_000,
        'the members deleted',
      )
    }, 120_000)
  })

  describe('a control plane killed with SIGKILL', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-k8s-adopt-'))
    const configFile = join(dataDir, 'config.json')
    const procs: ChildProcess[] = []
    afterAll(() => {
      for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL')
      rmSync(dataDir, { recursive: true, force: true })
    })

    it('re-adopts its worker Pod by label: no duplicate, the same worker serves the next job', async () => {
      // A fixed port: adopted workers call the URL they were given.
      writeFileSync(
        configFile,
        JSON.stringify({
          host: '127.0.0.1',
          port: await freePort(),
          logLevel: 'silent',
          fleet: { detectGpus: false },
          runtime: { kubernetes },
        }),
      )
      const first = await serveWithConfig(dataDir, configFile)
      procs.push(first.proc)
      const key = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()
      const call = async (url: string, path: string, method = 'GET', body?: unknown) => {
        const res = await fetch(url + path, {
          method,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        return { status: res.status, body: (await res.json()) as any }
      }
      const created = await call(
        first.url,
        '/v2/serverless',
        'POST',
        endpointBody(kubeEnv.workerImage, { name: 'k8s-adopt', workers: { min: 1, max: 1, idleTimeout: 60 } }),
      )
      expect(created.status).toBe(201)
      const ep = created.body.id
      const before = (await call(first.url, `/v2/${ep}/runsync`, 'POST', { input: { n: 1 } })).body
      expect(before.status).toBe('COMPLETED')
      const [pod] = await podsOf(ep)

      first.proc.kill('SIGKILL')
      await new Promise((r) => first.proc.once('exit', r))
      const second = await serveWithConfig(dataDir, configFile)
      procs.push(second.proc)
      const list = await until(
        async () => {
          const l = (await call(second.url, `/v2/serverless/${ep}/workers`)).body
          return l.workers.some((w: { id: string; status: string }) => w.id === before.workerId && w.status === 'IDLE')
            ? l
            : undefined
        },
        60_000,
        'the adopted worker idle',
      )
      expect(list.workers).toHaveLength(1)
      const after = (await call(second.url, `/v2/${ep}/runsync`, 'POST', { input: { n: 2 } })).body
      expect(after).toMatchObject({ status: 'COMPLETED', workerId: before.workerId })
      expect((await podsOf(ep)).map((p) => p.metadata?.uid)).toEqual([pod.metadata?.uid])

      // A graceful stop deletes the Pod.
      second.proc.kill('SIGTERM')
      await new Promise((r) => second.proc.once('exit', r))
      await until(async () => (await podsOf(ep)).length === 0, 30_000, 'the Pod deleted')
    }, 180_000)
  })
})
