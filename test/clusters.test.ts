import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { alive, pidOf, readPodLogs } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const GPU = 'NVIDIA GeForce RTX 4090'

/** Two data centers: DC-A with one 4090, DC-B with four (two hosts of two), all simulated. */
const config = {
  catalog: {
    dataCenters: [
      {
        id: 'DC-A',
        name: 'A',
        region: 'EUROPE',
        globalNetwork: false,
        networkVolumeTypes: ['STANDARD'],
        compliance: [],
      },
      {
        id: 'DC-B',
        name: 'B',
        region: 'EUROPE',
        globalNetwork: false,
        networkVolumeTypes: ['STANDARD'],
        compliance: [],
      },
    ],
  },
  fleet: {
    detectGpus: false,
    hosts: [
      {
        id: 'a1',
        dataCenterId: 'DC-A',
        vcpus: 16,
        memoryGb: 64,
        gpus: [{ typeId: GPU, count: 1, cudaVersion: '12.4', virtual: true }],
      },
      {
        id: 'b1',
        dataCenterId: 'DC-B',
        vcpus: 16,
        memoryGb: 64,
        gpus: [{ typeId: GPU, count: 2, cudaVersion: '12.4', virtual: true }],
      },
      {
        id: 'b2',
        dataCenterId: 'DC-B',
        vcpus: 16,
        memoryGb: 64,
        gpus: [{ typeId: GPU, count: 2, cudaVersion: '12.4', virtual: true }],
      },
    ],
  },
}

describe('instant clusters', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-clusters-'))
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer(config, { dataDir })
  })
  afterAll(async () => {
    for (const c of (await s.api('GET', '/v2/clusters')).body?.clusters ?? [])
      await s.api('DELETE', `/v2/clusters/${c.id}`)
    await s.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })

  const body = (over: Record<string, unknown> = {}) => ({
    name: 'train',
    type: 'TRAINING',
    compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
    image: 'hangar/cluster:latest',
    ...over,
  })
  const stock = async () =>
    (await s.api('GET', `/v2/catalog/gpus/${encodeURIComponent(GPU)}?include=AVAILABILITY&product=CLUSTER`)).body.stock
  const members = async (id: string) => (await s.api('GET', `/v2/clusters/${id}/pods`)).body.pods as any[]

  const invalid: Array<[string, unknown, number, string[]]> = [
    ['an unknown key', { ...body(), bogus: true }, 422, ["$: additional properties 'bogus' not allowed"]],
    ['a registry', { ...body(), registry: 'reg' }, 422, ["$: additional properties 'registry' not allowed"]],
    [
      'an unknown compute key',
      body({ compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2, cpu: 1 } }),
      422,
      ["compute: additional properties 'cpu' not allowed"],
    ],
    [
      'a NUL byte in an env name',
      body({ env: { 'N\u0000UL': 'y' } }),
      422,
      ['env: key "N\\u0000UL" must not contain a NUL character (\\u0000), which no program can be given'],
    ],
    [
      'one pod',
      body({ compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 1 } }),
      422,
      ['compute.podCount: must be >= 2'],
    ],
    [
      '251 pods',
      body({ compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 251 } }),
      422,
      ['compute.podCount: must be <= 250'],
    ],
    ['an unknown type', body({ type: 'MPI' }), 422, [expect.stringMatching(/^type: /) as unknown as string]],
    [
      'no image',
      { name: 'x', type: 'RAY', compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 } },
      422,
      ['image: is required unless templateId is set'],
    ],
    [
      'an unknown GPU type',
      body({ compute: { gpuTypeId: 'NVIDIA X', gpuCountPerPod: 1, podCount: 2 } }),
      400,
      ['compute.gpuTypeId: "NVIDIA X" is not a GPU type; see /v2/catalog/gpus'],
    ],
    [
      'more GPUs per pod than the type offers',
      body({ compute: { gpuTypeId: GPU, gpuCountPerPod: 9, podCount: 2 } }),
      400,
      [`compute.gpuCountPerPod: 9 is more than ${GPU} offers per pod (at most 8)`],
    ],
    [
      'an unknown data center',
      body({ dataCenterIds: ['NOPE'] }),
      400,
      ['dataCenterIds[0]: "NOPE" is not a data center; see /v2/catalog/datacenters'],
    ],
    [
      'both mount kinds',
      body({ mounts: { persistent: { size: 10, path: '/w' }, network: [{ volumeId: 'v', path: '/v' }] } }),
      400,
      [
        'mounts: set either persistent or network, not both',
        'mounts.network[0].volumeId: "v" is not one of your network volumes; see /v2/network-volumes',
      ],
    ],
  ]
  for (const [name, b, status, errors] of invalid) {
    it(`refuses ${name} (${status})`, async () => {
      const r = await s.api('POST', '/v2/clusters', b)
      expect(r.status, JSON.stringify(r.body)).toBe(status)
      expect(r.body.errors).toEqual(errors)
    })
  }

  it('places all or nothing: a cluster no data center can hold leaves nothing behind', async () => {
    expect(await stock()).toEqual({ total: 5, free: 5 })
    const r = await s.api('POST', '/v2/clusters', body({ compute: { gpuTypeId: GPU, gpuCountPerPod: 2, podCount: 3 } }))
    expect(r.status).toBe(400)
    expect(r.body.errors).toEqual([
      `compute: no data center can hold all 3 pods of 2 x ${GPU}; LOCAL-1 fits 0, DC-A fits 0, DC-B fits 2`,
    ])
    expect(await stock()).toEqual({ total: 5, free: 5 })
    expect((await s.api('GET', '/v2/clusters')).body.clusters).toEqual([])
    expect((await s.api('GET', '/v2/pods?includeClusterPods=true')).body.pods).toEqual([])
  })

  it('wires a real 2-node cluster: rank 1 reaches rank 0 with only the environment it was given', async () => {
    const created = await s.api('POST', '/v2/clusters', body({ ports: ['8080/http'] }))
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const c = created.body
    // DC-A has one GPU, so both members land in DC-B.
    expect(c).toMatchObject({
      name: 'train',
      type: 'TRAINING',
      compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
      dataCenterId: 'DC-B',
      pods: { total: 2 },
      network: { cidr: expect.stringMatching(/^127\.\d+\.\d+\.0\/24$/) },
    })
    expect(await stock()).toEqual({ total: 5, free: 3 })
    const net = c.network.cidr.slice(0, -4)
    await until(
      async () => (await s.api('GET', `/v2/clusters/${c.id}`)).body.pods.byStatus.RUNNING === 2,
      20_000,
      'both members RUNNING',
    )
    const [m0, m1] = await members(c.id)
    expect(m0.cluster).toEqual({ id: c.id, rank: 0, ip: `${net}1` })
    expect(m1.cluster).toEqual({ id: c.id, rank: 1, ip: `${net}2` })
    const port = String((await s.hangar.store.clusters.get(c.id))!.primaryPort)
    expect(m1.env).toMatchObject({
      PRIMARY_ADDR: `${net}1`,
      MASTER_ADDR: `${net}1`,
      PRIMARY_PORT: port,
      MASTER_PORT: port,
      HOST_NODE_ADDR: `${net}1:${port}`,
      NODE_ADDR: `${net}2`,
      NODE_RANK: '1',
      NUM_NODES: '2',
      NUM_TRAINERS: '1',
      WORLD_SIZE: '2',
    })
    const got = await readPodLogs(s, m1.id, { query: 'tail=1000&source=container', match: /got: welcome/ })
    expect(got.at(-1)!.data.line).toBe(`rank 1 got: welcome, rank 1 at ${net}2`)
    const heard = await readPodLogs(s, m0.id, { query: 'tail=1000&source=container', match: /rank 0 got:/ })
    expect(heard.at(-1)!.data.line).toBe(`rank 0 got: hello from rank 1 at ${net}2 (from ${net}2)`)
    expect((await s.api('GET', `/v2/clusters/${c.id}`)).body).toMatchObject({
      pods: { total: 2, byStatus: { RUNNING: 2 } },
      primary: { podId: m0.id, status: 'RUNNING' },
    })
  })

  it('manages members only through the cluster: hidden from /v2/pods, 409 on PATCH, DELETE and actions', async () => {
    const [c] = (await s.api('GET', '/v2/clusters')).body.clusters
    const [m0] = await members(c.id)
    expect((await s.api('GET', '/v2/pods')).body.pods).toEqual([])
    expect((await s.api('GET', '/v2/pods?includeClusterPods=true')).body.pods.map((p: any) => p.id).sort()).toEqual(
      (await members(c.id)).map((p) => p.id).sort(),
    )
    expect((await s.api('GET', `/v2/pods/${m0.id}`)).body.cluster).toMatchObject({ id: c.id, rank: 0 })
    for (const [method, path, b] of [
      ['PATCH', `/v2/pods/${m0.id}`, { name: 'x' }],
      ['DELETE', `/v2/pods/${m0.id}`, undefined],
      ['POST', `/v2/pods/${m0.id}/action`, { action: 'stop' }],
      ['POST', `/v2/pods/${m0.id}/action`, { action: 'terminate' }],
    ] as const) {
      const r = await s.api(method, path, b)
      expect(r.status, `${method} ${path}`).toBe(409)
      expect(r.body.detail).toBe(
        `pod ${m0.id} belongs to cluster ${c.id} and cannot be ${method === 'PATCH' ? 'updated' : method === 'DELETE' || b?.action === 'terminate' ? 'terminated' : 'stopped'} on its own; use /v2/clusters/${c.id}`,
      )
    }
    expect((await s.api('PATCH', `/v2/clusters/${c.id}`, {})).status).toBe(422)
    expect((await s.api('PATCH', `/v2/clusters/${c.id}`, { name: 'x', type: 'RAY' })).status).toBe(422)
    const renamed = await s.api('PATCH', `/v2/clusters/${c.id}`, { name: 'renamed' })
    expect(renamed.status).toBe(200)
    expect(renamed.body.name).toBe('renamed')
  })

  it('keeps a running cluster across a control-plane restart', async () => {
    const [c] = (await s.api('GET', '/v2/clusters')).body.clusters
    const pids = await Promise.all(
      (await members(c.id)).map(async (m) => pidOf((await s.hangar.store.pods.get(m.id))!.runtimeRef)!),
    )
    await s.stop()
    s = await startTestServer(config, { dataDir })
    expect((await s.api('GET', `/v2/clusters/${c.id}`)).body).toMatchObject({
      name: 'renamed',
      pods: { total: 2, byStatus: { RUNNING: 2 } },
    })
    for (const [i, m] of (await members(c.id)).entries())
      expect(pidOf((await s.hangar.store.pods.get(m.id))!.runtimeRef)).toBe(pids[i])
    expect(await stock()).toEqual({ total: 5, free: 3 })
  })

  it('gives SLURM and RAY members their roles; DELETE terminates every member', async () => {
    const [training] = (await s.api('GET', '/v2/clusters')).body.clusters
    const oldPids = await Promise.all(
      (await members(training.id)).map(async (m) => pidOf((await s.hangar.store.pods.get(m.id))!.runtimeRef)!),
    )
    expect((await s.api('DELETE', `/v2/clusters/${training.id}`)).status).toBe(204)
    expect(oldPids.some(alive)).toBe(false)
    expect((await s.api('GET', `/v2/clusters/${training.id}`)).status).toBe(404)
    expect((await s.api('GET', '/v2/pods?includeClusterPods=true')).body.pods).toEqual([])
    expect(await stock()).toEqual({ total: 5, free: 5 })

    const slurm = (await s.api('POST', '/v2/clusters', body({ type: 'SLURM', dataCenterIds: ['DC-B'] }))).body
    expect((await members(slurm.id)).map((m) => m.cluster.role)).toEqual(['SLURM_CONTROLLER', 'SLURM_COMPUTE'])
    const ray = (await s.api('POST', '/v2/clusters', body({ type: 'RAY', dataCenterIds: ['DC-B'] }))).body
    expect((await members(ray.id)).map((m) => m.cluster.role)).toEqual(['RAY_HEAD', 'RAY_WORKER'])
    expect(ray.network.cidr).not.toBe(slurm.network.cidr)
    for (const id of [slurm.id, ray.id]) expect((await s.api('DELETE', `/v2/clusters/${id}`)).status).toBe(204)
  })

  it('answers other accounts with 404', async () => {
    const created = (await s.api('POST', '/v2/clusters', body())).body
    const bob = await s.accountKey('cluster-bob')
    for (const [method, path] of [
      ['GET', `/v2/clusters/${created.id}`],
      ['GET', `/v2/clusters/${created.id}/pods`],
      ['DELETE', `/v2/clusters/${created.id}`],
    ] as const) {
      expect((await s.api(method, path, undefined, bob)).status).toBe(404)
    }
    expect((await s.api('PATCH', `/v2/clusters/${created.id}`, { name: 'x' }, bob)).status).toBe(404)
    expect((await s.api('GET', '/v2/clusters', undefined, bob)).body.clusters).toEqual([])
    expect((await s.api('DELETE', `/v2/clusters/${created.id}`)).status).toBe(204)
  })
})
