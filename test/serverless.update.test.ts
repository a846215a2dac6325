import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

// R14: PATCH /v2/serverless/{id} applies the body and re-checks every create rule on the result.
describe('PATCH /v2/serverless/{id} (R14)', () => {
  let s: TestServer
  let key: string
  beforeAll(async () => {
    s = await startTestServer()
    key = await s.accountKey('patch-co')
  })
  afterAll(() => s.stop())

  const queue = { name: 'ep', type: 'QUEUE', scaling: { type: 'QUEUE_DELAY', queueDelay: 4 }, image: 'img:1' }
  async function endpoint(extra: object) {
    const r = await s.api('POST', '/v2/serverless', { ...queue, ...extra }, key)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body
  }
  const gpuEndpoint = (
    gpu: object = { pools: ['ADA_24', 'AMPERE_48'], excludedTypes: ['NVIDIA L4'] },
    extra: object = {},
  ) => endpoint({ gpu, ...extra })
  const cpuEndpoint = (extra: object = {}) => endpoint({ cpu: [{ id: 'cpu3c', vcpuCount: 2 }], ...extra })
  const patch = (id: string, body: unknown) => s.api('PATCH', `/v2/serverless/${id}`, body, key)
  async function patched(id: string, body: unknown) {
    const r = await patch(id, body)
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    return r.body
  }
  async function rejected(id: string, body: unknown, status: 400 | 404 | 422, errors: unknown[] | undefined) {
    const r = await patch(id, body)
    expect(r.status, JSON.stringify(r.body)).toBe(status)
    expect(r.body.errors).toEqual(errors)
  }

  it('refuses to change type (422, as an unknown key)', async () => {
    const ep = await gpuEndpoint()
    await rejected(ep.id, { type: 'LOAD_BALANCER' }, 422, ["$: additional properties 'type' not allowed"])
  })

  it('answers reads after a PATCH with the new values, the single GET and the list alike (each read before it too)', async () => {
    const ep = await cpuEndpoint()
    const read = async () => {
      const one = await s.api('GET', `/v2/serverless/${ep.id}`, undefined, key)
      const all = await s.api('GET', '/v2/serverless', undefined, key)
      return [one.body, all.body.endpoints.find((e: { id: string }) => e.id === ep.id)]
    }
    // Twice: the second read is the one a kept view would answer.
    for (const view of [...(await read()), ...(await read())])
      expect(view).toMatchObject({ name: 'ep', workers: { max: 3 } })
    await patched(ep.id, { name: 'renamed', workers: { max: 5 } })
    for (const view of await read()) expect(view).toMatchObject({ name: 'renamed', workers: { max: 5 } })
  })

  it('answers 404 for an unknown endpoint', async () => {
    const r = await patch('nope', { name: 'x' })
    expect(r.status).toBe(404)
    expect(r.body.detail).toBe('endpoint "nope" was not found')
  })

  it('changes the name alone and accepts an empty body as no change', async () => {
    const ep = await gpuEndpoint()
    expect((await patched(ep.id, { name: 'renamed' })).name).toBe('renamed')
    const same = await patched(ep.id, {})
    // The create answer alone shows the webhook secret.
    const { webhookSecret: _secret, ...shown } = ep
    expect({ ...same, name: ep.name }).toEqual(shown)
    await rejected(ep.id, { name: '' }, 422, ['name: must NOT have fewer than 1 characters'])
  })

  describe('GPU selection', () => {
    it('replaces pools and exclusions together', async () => {
      const ep = await gpuEndpoint()
      expect(
        (await patched(ep.id, { gpu: { pools: ['AMPERE_24', 'ADA_24'], excludedTypes: [' NVIDIA RTX A5000 '] } })).gpu,
      ).toMatchObject({
        pools: ['AMPERE_24', 'ADA_24'],
        excludedTypes: ['NVIDIA RTX A5000'],
      })
    })
    it('clears the exclusions when pools come alone', async () => {
      const ep = await gpuEndpoint()
      expect((await patched(ep.id, { gpu: { pools: ['ADA_24'] } })).gpu).toMatchObject({
        pools: ['ADA_24'],
        excludedTypes: [],
      })
    })
    it('keeps pools and exclusions when pools are omitted, so count or CUDA change alone', async () => {
      const ep = await gpuEndpoint()
      expect((await patched(ep.id, { gpu: { count: 2 } })).gpu).toEqual({
        pools: ['ADA_24', 'AMPERE_48'],
        excludedTypes: ['NVIDIA L4'],
        count: 2,
        allowedCudaVersions: [],
        minCudaVersion: null,
      })
      expect((await patched(ep.id, { gpu: { minCudaVersion: '12.2' } })).gpu).toMatchObject({
        pools: ['ADA_24', 'AMPERE_48'],
        excludedTypes: ['NVIDIA L4'],
        count: 2,
        minCudaVersion: '12.2',
      })
    })
    it('rejects an exclusion outside the pools sent with it (400)', async () => {
      const ep = await gpuEndpoint()
      await rejected(ep.id, { gpu: { pools: ['ADA_24'], excludedTypes: ['NVIDIA A40'] } }, 400, [
        'gpu.excludedTypes[0]: "NVIDIA A40" is not a GPU type in pools ADA_24',
      ])
    })
    it('rejects excludedTypes without pools (400), since the two are one selection', async () => {
      const ep = await gpuEndpoint()
      await rejected(ep.id, { gpu: { excludedTypes: ['NVIDIA GeForce RTX 4090'] } }, 400, [
        'gpu.excludedTypes: can only be sent together with gpu.pools: pools and excludedTypes are replaced as one selection',
      ])
    })
    it('re-checks the selection: unknown pools and nothing left selected are 400', async () => {
      const ep = await gpuEndpoint()
      await rejected(ep.id, { gpu: { pools: ['NOPE'] } }, 400, [
        expect.stringMatching(/^gpu\.pools\[0\]: "NOPE" is not a serverless GPU pool/),
      ])
      await rejected(ep.id, { gpu: { pools: ['AMPERE_48'], excludedTypes: ['NVIDIA RTX A6000', 'NVIDIA A40'] } }, 400, [
        'gpu.excludedTypes: excludes every GPU type of pools AMPERE_48; at least one type must remain selected',
      ])
      await rejected(ep.id, { gpu: { count: 0 } }, 422, ['gpu.count: must be >= 1'])
    })
  })

  describe('CUDA limits', () => {
    it('clears allowedCudaVersions with [] and minCudaVersion with ""', async () => {
      const ep = await gpuEndpoint({ pools: ['ADA_24'], allowedCudaVersions: ['12.4'] })
      expect((await patched(ep.id, { gpu: { allowedCudaVersions: [] } })).gpu).toMatchObject({
        allowedCudaVersions: [],
        minCudaVersion: null,
      })
      expect((await patched(ep.id, { gpu: { minCudaVersion: '12.11' } })).gpu).toMatchObject({
        allowedCudaVersions: [],
        minCudaVersion: '12.11',
      })
      expect((await patched(ep.id, { gpu: { minCudaVersion: '' } })).gpu).toMatchObject({
        allowedCudaVersions: [],
        minCudaVersion: null,
      })
    })
    it('does not clear one limit when the other is set, so the conflict is 400', async () => {
      const ep = await gpuEndpoint({ pools: ['ADA_24'], minCudaVersion: '12.1' })
      await rejected(ep.id, { gpu: { allowedCudaVersions: ['12.4'] } }, 400, [
        'gpu.allowedCudaVersions: ["12.4"] cannot be combined with gpu.minCudaVersion "12.1": use one or the other (allowedCudaVersions [] means any)',
      ])
      expect((await patched(ep.id, { gpu: { allowedCudaVersions: ['12.4'], minCudaVersion: '' } })).gpu).toMatchObject({
        allowedCudaVersions: ['12.4'],
        minCudaVersion: null,
      })
    })
    it('validates the format (422)', async () => {
      const ep = await gpuEndpoint({ pools: ['ADA_24'] })
      await rejected(ep.id, { gpu: { minCudaVersion: '12' } }, 422, [
        'gpu.minCudaVersion: must match ^(\\d+\\.\\d+)?$, got "12"',
      ])
    })
  })

  describe('gpu versus cpu', () => {
    it('rejects gpu on a CPU endpoint and cpu on a GPU endpoint (400)', async () => {
      const c = await cpuEndpoint()
      await rejected(c.id, { gpu: { count: 2 } }, 400, [
        'gpu: this is a CPU endpoint: it has cpu flavors and cannot take a gpu configuration',
      ])
      await rejected(c.id, { gpu: { minCudaVersion: '12.4' } }, 400, [
        'gpu: this is a CPU endpoint: it has cpu flavors and cannot take a gpu configuration',
      ])
      const g = await gpuEndpoint()
      await rejected(g.id, { cpu: [{ id: 'cpu3c', vcpuCount: 2 }] }, 400, [
        'cpu: this is a GPU endpoint: it has a gpu configuration and cannot take cpu flavors',
      ])
    })
    it('replaces the cpu list and re-checks it', async () => {
      const c = await cpuEndpoint()
      expect(
        (
          await patched(c.id, {
            cpu: [
              { id: 'cpu5m', vcpuCount: 4 },
              { id: 'cpu3c', vcpuCount: 8 },
            ],
          })
        ).cpu,
      ).toEqual([
        { id: 'cpu5m', vcpuCount: 4, memory: 32 },
        { id: 'cpu3c', vcpuCount: 8, memory: 16 },
      ])
      await rejected(c.id, { cpu: [{ id: 'cpu3c', vcpuCount: 12 }] }, 422, [
        'cpu[0].vcpuCount: must be a power of two, got 12',
      ])
      await rejected(c.id, { cpu: [{ id: 'cpu3m', vcpuCount: 32 }] }, 400, [
        'cpu[0].vcpuCount: 32 is outside the range of cpu3m, 2 to 16',
      ])
    })
  })

  describe('scaling and workers', () => {
    it('switches the scaler; idleTimeout leaves a queue endpoint on REQUEST_COUNT and comes back as the default', async () => {
      const ep = await cpuEndpoint({ workers: { idleTimeout: 60 } })
      const onRequests = await patched(ep.id, { scaling: { type: 'REQUEST_COUNT', requestCount: 2 } })
      expect(onRequests).toMatchObject({
        scaling: { type: 'REQUEST_COUNT', requestCount: 2 },
        workers: { min: 0, max: 3 },
      })
      expect(onRequests.workers).not.toHaveProperty('idleTimeout')
      await rejected(ep.id, { workers: { idleTimeout: 5 } }, 400, [
        expect.stringMatching(/^workers\.idleTimeout: is not used by a QUEUE endpoint scaling on REQUEST_COUNT/),
      ])
      const back = await patched(ep.id, {
        scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
        workers: { idleTimeout: 30 },
      })
      expect(back.workers).toEqual({ min: 0, max: 3, idleTimeout: 30 })
    })
    it('keeps a load-balancing endpoint on REQUEST_COUNT (400)', async () => {
      const ep = await cpuEndpoint({ type: 'LOAD_BALANCER', scaling: { type: 'REQUEST_COUNT', requestCount: 4 } })
      await rejected(ep.id, { scaling: { type: 'QUEUE_DELAY', queueDelay: 2 } }, 400, [
        'scaling.type: a LOAD_BALANCER endpoint requires REQUEST_COUNT scaling; QUEUE_DELAY applies to QUEUE endpoints only',
      ])
      expect((await patched(ep.id, { scaling: { type: 'REQUEST_COUNT', requestCount: 9 } })).scaling).toEqual({
        type: 'REQUEST_COUNT',
        requestCount: 9,
      })
    })
    it('merges workers fields and checks min against max on the result', async () => {
      const ep = await cpuEndpoint({ workers: { min: 2, max: 4 } })
      expect((await patched(ep.id, { workers: { max: 6 } })).workers).toEqual({ min: 2, max: 6, idleTimeout: 10 })
      await rejected(ep.id, { workers: { min: 7 } }, 400, ['workers.min: 7 is above workers.max 6 (unchanged)'])
      await rejected(ep.id, { workers: { max: 1 } }, 400, ['workers.max: 1 is below workers.min 2'])
    })
  })

  describe('container settings and placement', () => {
    it('replaces the command, env and ports, and clears the registry with null', async () => {
      const registry = (await s.api('POST', '/v2/registries', { name: 'r', username: 'u', password: 'p' }, key)).body.id
      const ep = await cpuEndpoint({ args: 'python a.py', env: { A: '1', B: '2' }, ports: ['8000/http'], registry })
      const p1 = await patched(ep.id, { cmd: ['python', 'b.py'], env: { C: '3' }, ports: [] })
      expect(p1).toMatchObject({ args: 'python b.py', cmd: ['python', 'b.py'], env: { C: '3' }, ports: [], registry })
      const p2 = await patched(ep.id, { args: '', registry: null })
      expect(p2).toMatchObject({ args: '', cmd: [], entrypoint: [], registry: null })
      await rejected(ep.id, { registry: 'nope' }, 400, [
        'registry: "nope" is not one of your container registry credentials; see /v2/registries',
      ])
      await rejected(ep.id, { image: '' }, 422, ['image: must NOT have fewer than 1 characters'])
    })
    it('applies a templateId once: its settings, the body over them, env merged and replacing the endpoint env', async () => {
      const tpl = (
        await s.api(
          'POST',
          '/v2/templates',
          { name: 't', image: 'tpl:1', serverless: true, env: { T: 't', SHARED: 'tpl' }, disk: 30 },
          key,
        )
      ).body
      const ep = await cpuEndpoint({ env: { OLD: '1' } })
      const p = await patched(ep.id, { templateId: tpl.id, env: { SHARED: 'body' } })
      expect(p).toMatchObject({ image: 'tpl:1', disk: 30, env: { T: 't', SHARED: 'body' } })
      const pod = (await s.api('POST', '/v2/templates', { name: 'pod', image: 'pod:1' }, key)).body
      await rejected(ep.id, { templateId: pod.id }, 422, [
        `templateId: template "${pod.id}" is a pod template, not a serverless one`,
      ])
      const missing = await patch(ep.id, { templateId: 'tpl_missing' })
      expect(missing.status).toBe(404)
    })
    it('re-checks data centers and volumes, and changes timeout and flashboot', async () => {
      const ep = await cpuEndpoint()
      await rejected(ep.id, { dataCenterIds: ['MARS-1'], networkVolumes: ['nv-x'] }, 400, [
        'dataCenterIds[0]: "MARS-1" is not a data center; see /v2/catalog/datacenters',
        'networkVolumes[0]: "nv-x" is not one of your network volumes; see /v2/network-volumes',
      ])
      expect(await patched(ep.id, { dataCenterIds: ['LOCAL-1'], timeout: 5000, flashboot: 'FLASHBOOT' })).toMatchObject(
        { dataCenterIds: ['LOCAL-1'], timeout: 5000, flashboot: 'FLASHBOOT' },
      )
    })
  })
})
