import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { containerEnv, containerSkipReason } from './helpers/containers.js'
import { readPodLogs } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const skip = containerSkipReason()
if (skip) console.warn(skip)

const GPU = 'NVIDIA GeForce RTX 4090'

/**
 * A cluster whose members are containers of one engine. They share the host's network (the engine's `host`
 * network, the one that works on machines like CI's), so the wiring is the one of processes: each member has
 * its own loopback address of the cluster's 127.x.y.0/24 and the same env.
 */
describe.skipIf(skip !== null)('clusters on containers (Podman, host network)', () => {
  let s: TestServer
  let docker: Docker
  beforeAll(async () => {
    docker = new Docker({ socketPath: new URL(containerEnv.dockerHost!).pathname })
    s = await startTestServer({
      fleet: {
        detectGpus: false,
        hosts: [
          {
            id: 'box',
            dataCenterId: 'LOCAL-1',
            vcpus: 16,
            memoryGb: 64,
            gpus: [{ typeId: GPU, count: 2, cudaVersion: '12.4', virtual: true }],
            engine: {
              address: containerEnv.dockerHost,
              network: 'host',
              gpus: 'none',
              cgroupParent: containerEnv.cgroupParent,
            },
          },
        ],
      },
    })
  })
  afterAll(async () => {
    for (const c of (await s.api('GET', '/v2/clusters')).body?.clusters ?? [])
      await s.api('DELETE', `/v2/clusters/${c.id}`)
    await s?.stop()
  })

  it('two container members reach each other with the env they were given', async () => {
    const created = await s.api('POST', '/v2/clusters', {
      name: 'train',
      type: 'TRAINING',
      compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
      image: 'hangar/cluster:latest',
      ports: ['8080/http'],
    })
    expect(created.status, JSON.stringify(created.body)).toBe(201)
    const c = created.body
    const net = c.network.cidr.slice(0, -4)
    await until(
      async () => (await s.api('GET', `/v2/clusters/${c.id}`)).body.pods.byStatus.RUNNING === 2,
      60_000,
      'both members RUNNING',
    ).catch(async (err) => {
      const pods = (await s.api('GET', `/v2/clusters/${c.id}/pods`)).body.pods as Array<{ id: string }>
      const logs = await Promise.all(
        pods.map((p) => readPodLogs(s, p.id, { query: 'tail=50', timeoutMs: 2_000 }).catch(() => [])),
      )
      throw new Error(`${err.message}: ${JSON.stringify(logs.map((l) => l.map((e) => e.data.line)))}`)
    })
    const [m0, m1] = (await s.api('GET', `/v2/clusters/${c.id}/pods`)).body.pods
    const containers = await docker.listContainers({ filters: JSON.stringify({ label: [`io.hangar.kind=pod`] }) })
    const ids = new Set(containers.map((x) => x.Labels['io.hangar.id']))
    expect(ids.has(m0.id) && ids.has(m1.id)).toBe(true)
    expect(m1.env).toMatchObject({
      PRIMARY_ADDR: `${net}1`,
      MASTER_ADDR: `${net}1`,
      NODE_ADDR: `${net}2`,
      NODE_RANK: '1',
      WORLD_SIZE: '2',
    })
    const got = await readPodLogs(s, m1.id, { query: 'tail=1000&source=container', match: /got: welcome/ })
    expect(got.at(-1)!.data.line).toBe(`rank 1 got: welcome, rank 1 at ${net}2`)
    const heard = await readPodLogs(s, m0.id, { query: 'tail=1000&source=container', match: /rank 0 got:/ })
    expect(heard.at(-1)!.data.line).toBe(`rank 0 got: hello from rank 1 at ${net}2 (from ${net}2)`)
    expect((await s.api('DELETE', `/v2/clusters/${c.id}`)).status).toBeLessThan(300)
  }, 180_000)
})
