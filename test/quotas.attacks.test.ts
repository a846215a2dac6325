import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { podBody, terminateAll } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** Quotas tried as a tenant would to pass them: concurrent creates. */
describe('quotas: concurrent creates', () => {
  let s: TestServer
  let team: string
  beforeAll(async () => {
    s = await startTestServer()
    team = await s.accountKey('race-q')
  })
  afterAll(async () => {
    await terminateAll(s, team)
    await s?.stop()
  })

  it('lets no more pods than the pods quota through when creates race', async () => {
    expect((await s.api('PUT', '/v2/admin/accounts/race-q/quotas', { pods: 2 })).status).toBe(200)
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => s.api('POST', '/v2/pods', podBody({ name: `race-${i}` }), team)),
    )
    const created = answers.filter((a) => a.status === 201)
    // The rest are refused by the quota, or by capacity where racing placements took the host's last vCPUs first.
    const refused = answers.filter((a) => a.status !== 201)
    expect(created.length, JSON.stringify(refused.map((a) => a.body.detail))).toBe(2)
    for (const r of refused) expect([400, 403]).toContain(r.status)
    expect(refused.some((r) => r.status === 403 && r.body.quota?.name === 'pods')).toBe(true)
    expect((await s.api('GET', '/v2/account/quotas', undefined, team)).body.quotas.pods).toEqual({ use: 2, limit: 2 })
  })

  it('lets no more network volume GB than the quota through when creates race', async () => {
    expect((await s.api('PUT', '/v2/admin/accounts/race-q/quotas', { networkVolumeGb: 100 })).status).toBe(200)
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        s.api('POST', '/v2/network-volumes', { name: `v${i}`, size: 50, dataCenter: 'LOCAL-1' }, team),
      ),
    )
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 403, 403, 403, 403])
    const quota = (await s.api('GET', '/v2/account/quotas', undefined, team)).body.quotas.networkVolumeGb
    expect(quota).toEqual({ use: 100, limit: 100 })
    // Grows racing for the last GB: one passes.
    expect((await s.api('PUT', '/v2/admin/accounts/race-q/quotas', { networkVolumeGb: 130 })).status).toBe(200)
    const volumes = answers.filter((a) => a.status === 201).map((a) => a.body as { id: string })
    const grows = await Promise.all(
      volumes.map((v) => s.api('PATCH', `/v2/network-volumes/${v.id}`, { size: 80 }, team)),
    )
    expect(grows.map((g) => g.status).sort()).toEqual([200, 403])
  })
})

describe('quotas: concurrent cluster creates', () => {
  const GPU = 'NVIDIA GeForce RTX 4090'
  let s: TestServer
  let team: string
  beforeAll(async () => {
    s = await startTestServer({
      fleet: {
        detectGpus: false,
        hosts: [
          {
            id: 'g1',
            dataCenterId: 'LOCAL-1',
            vcpus: 32,
            memoryGb: 128,
            gpus: [{ typeId: GPU, count: 6, cudaVersion: '12.4', virtual: true }],
          },
        ],
      },
    })
    team = await s.accountKey('race-cl')
  })
  afterAll(async () => {
    for (const c of (await s.api('GET', '/v2/clusters', undefined, team)).body?.clusters ?? [])
      await s.api('DELETE', `/v2/clusters/${c.id}`, undefined, team)
    await s?.stop()
  })

  it('lets no more GPUs than the GPU quota through when cluster creates race', async () => {
    expect((await s.api('PUT', '/v2/admin/accounts/race-cl/quotas', { gpus: 2 })).status).toBe(200)
    const answers = await Promise.all(
      [0, 1, 2].map((i) =>
        s.api(
          'POST',
          '/v2/clusters',
          {
            name: `race-${i}`,
            type: 'TRAINING',
            compute: { gpuTypeId: GPU, gpuCountPerPod: 1, podCount: 2 },
            image: 'hangar/cluster:latest',
          },
          team,
        ),
      ),
    )
    const created = answers.filter((a) => a.status === 201)
    expect(created.length, JSON.stringify(answers.map((a) => [a.status, a.body.detail]))).toBe(1)
    expect((await s.api('GET', '/v2/account/quotas', undefined, team)).body.quotas.gpus.use).toBe(2)
  })
})
