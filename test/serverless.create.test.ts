import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

// Create rules R1-R5 and R7-R9 of the serverless endpoint issue, each through the real server.
describe('POST /v2/serverless: create rules', () => {
  let s: TestServer
  let key: string
  beforeAll(async () => {
    s = await startTestServer()
    key = await s.accountKey('create-co')
  })
  afterAll(() => s.stop())

  const queue = {
    name: 'ep',
    type: 'QUEUE',
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    image: 'ghcr.io/acme/worker:1',
  }
  const onGpu = (gpu: object) => ({ ...queue, gpu })
  const onCpu = (cpu: object[], extra: object = {}) => ({ ...queue, cpu, ...extra })
  const create = (body: unknown) => s.api('POST', '/v2/serverless', body, key)

  async function rejected(body: unknown, status: 400 | 422, errors: unknown[]) {
    const r = await create(body)
    expect(r.status, JSON.stringify(r.body)).toBe(status)
    expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(r.body.errors).toEqual(errors)
    return r.body
  }
  async function created(body: unknown) {
    const r = await create(body)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body
  }

  describe('R1 schema violations are 422 with one errors entry each', () => {
    it('rejects unknown properties, at the top and nested', async () => {
      await rejected({ ...onGpu({ pools: ['ADA_24'] }), bogus: 1 }, 422, [
        "$: additional properties 'bogus' not allowed",
      ])
      await rejected(onGpu({ pools: ['ADA_24'], size: 'xl' }), 422, ["gpu: additional properties 'size' not allowed"])
    })
    it('rejects a NUL byte in an env name or value, or in the command, on create and update', async () => {
      await rejected({ ...onCpu([{ id: 'cpu3c', vcpuCount: 2 }]), env: { 'N\u0000UL': 'y', A: 'b\u0000' } }, 422, [
        'env: key "N\\u0000UL" must not contain a NUL character (\\u0000), which no program can be given',
        'env.A: must not contain a NUL character (\\u0000), which no program can be given, got "b\\u0000"',
      ])
      await rejected({ ...onCpu([{ id: 'cpu3c', vcpuCount: 2 }]), cmd: ['run', 'x\u0000'] }, 422, [
        'cmd[1]: must not contain a NUL character (\\u0000), which no program can be given, got "x\\u0000"',
      ])
      const ep = await created(onCpu([{ id: 'cpu3c', vcpuCount: 2 }], { workers: { min: 0, max: 0 } }))
      const patch = await s.api('PATCH', `/v2/serverless/${ep.id}`, { env: { A: 'b\u0000' } }, key)
      expect(patch.status).toBe(422)
      expect(patch.body.errors).toEqual([
        'env.A: must not contain a NUL character (\\u0000), which no program can be given, got "b\\u0000"',
      ])
    })
    it('requires name, type and scaling; type has no default', async () => {
      await rejected({ image: 'x', gpu: { pools: ['ADA_24'] } }, 422, [
        'name: is required',
        'type: is required',
        'scaling: is required',
      ])
      const { type: _t, ...noType } = onGpu({ pools: ['ADA_24'] })
      await rejected(noType, 422, ['type: is required'])
    })
    it('rejects wrong types without coercing them', async () => {
      await rejected({ ...onGpu({ pools: ['ADA_24'] }), workers: { min: '1' }, timeout: '300000' }, 422, [
        'workers.min: must be integer, got string',
        'timeout: must be integer, got string',
      ])
      await rejected({ ...onGpu({ pools: ['ADA_24'] }), type: 'PUSH' }, 422, [
        'type: must be one of "QUEUE", "LOAD_BALANCER", got "PUSH"',
      ])
    })
    it('rejects out-of-bound values and an empty name, listing every failure', async () => {
      await rejected({ ...onGpu({ pools: ['ADA_24'], count: 0 }), name: '', disk: 0 }, 422, [
        'name: must NOT have fewer than 1 characters',
        'disk: must be >= 1',
        'gpu.count: must be >= 1',
      ])
    })
    it('answers 422 rather than 400 when a body breaks the schema and a cross-field rule', async () => {
      await rejected({ ...queue, bogus: true }, 422, ["$: additional properties 'bogus' not allowed"])
    })
    it('accepts a minimal valid body with 201 and the full Endpoint shape', async () => {
      const ep = await created(onGpu({ pools: ['ADA_24'] }))
      expect(ep).toEqual({
        id: expect.any(String),
        name: 'ep',
        type: 'QUEUE',
        requestUrls: expect.objectContaining({ run: `${s.url}/v2/${ep.id}/run` }),
        image: 'ghcr.io/acme/worker:1',
        args: '',
        cmd: [],
        entrypoint: [],
        disk: 10,
        env: {},
        ports: [],
        registry: null,
        gpu: { pools: ['ADA_24'], count: 1, allowedCudaVersions: [], minCudaVersion: null, excludedTypes: [] },
        workers: { min: 0, max: 3, idleTimeout: 10 },
        scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
        dataCenterIds: [],
        networkVolumes: [],
        timeout: 300000,
        flashboot: 'OFF',
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
        // Hangar extension, in the create answer only: the secret signing the endpoint's webhooks.
        webhookSecret: expect.stringMatching(/^whsec_/),
      })
    })
  })

  describe('R2 exactly one of gpu or cpu', () => {
    it('rejects neither with 400', async () => {
      await rejected(queue, 400, ['$: exactly one of gpu or cpu must be set; neither was sent'])
    })
    it('rejects both with 400', async () => {
      await rejected({ ...onGpu({ pools: ['ADA_24'] }), cpu: [{ id: 'cpu3c', vcpuCount: 2 }] }, 400, [
        '$: exactly one of gpu or cpu must be set; both were sent',
      ])
    })
    it('accepts either alone; a CPU endpoint has gpu null and a GPU endpoint no cpu', async () => {
      const g = await created(onGpu({ pools: ['ADA_24'] }))
      expect(g).not.toHaveProperty('cpu')
      const c = await created(onCpu([{ id: 'cpu3c', vcpuCount: 2 }]))
      expect(c.gpu).toBeNull()
      expect(c.cpu).toEqual([{ id: 'cpu3c', vcpuCount: 2, memory: 4 }])
    })
  })

  describe('R3 CUDA constraints only under gpu', () => {
    it('rejects CUDA fields with a CPU create with 422', async () => {
      await rejected(onCpu([{ id: 'cpu3c', vcpuCount: 2 }], { gpu: { minCudaVersion: '12.4' } }), 422, [
        'gpu.minCudaVersion: CUDA constraints apply only to GPU endpoints, and this create sets cpu',
      ])
      await rejected(
        onCpu([{ id: 'cpu3c', vcpuCount: 2 }], { gpu: { allowedCudaVersions: ['12.4'], minCudaVersion: '12.1' } }),
        422,
        [
          'gpu.allowedCudaVersions: CUDA constraints apply only to GPU endpoints, and this create sets cpu',
          'gpu.minCudaVersion: CUDA constraints apply only to GPU endpoints, and this create sets cpu',
        ],
      )
      await rejected(onCpu([{ id: 'cpu3c', vcpuCount: 2 }], { allowedCudaVersions: ['12.4'] }), 422, [
        "$: additional properties 'allowedCudaVersions' not allowed",
      ])
      await rejected(onCpu([{ id: 'cpu3c', vcpuCount: 2, minCudaVersion: '12.4' }]), 422, [
        "cpu[0]: additional properties 'minCudaVersion' not allowed",
      ])
    })
    it('accepts them under gpu', async () => {
      const ep = await created(onGpu({ pools: ['ADA_24'], allowedCudaVersions: ['12.4', '12.2'] }))
      expect(ep.gpu.allowedCudaVersions).toEqual(['12.4', '12.2'])
    })
  })

  describe('R4 allowedCudaVersions with minCudaVersion', () => {
    it('rejects a non-empty list with a floor with 400', async () => {
      await rejected(onGpu({ pools: ['ADA_24'], allowedCudaVersions: ['12.4'], minCudaVersion: '12.1' }), 400, [
        'gpu.allowedCudaVersions: ["12.4"] cannot be combined with gpu.minCudaVersion "12.1": use one or the other (allowedCudaVersions [] means any)',
      ])
    })
    it('accepts an explicit empty list with a floor', async () => {
      const ep = await created(onGpu({ pools: ['ADA_24'], allowedCudaVersions: [], minCudaVersion: '12.1' }))
      expect(ep.gpu).toMatchObject({ allowedCudaVersions: [], minCudaVersion: '12.1' })
    })
  })

  describe('R5 CUDA version format', () => {
    it('rejects values that are not <major>.<minor> with 422', async () => {
      await rejected(onGpu({ pools: ['ADA_24'], minCudaVersion: '12' }), 422, [
        'gpu.minCudaVersion: must match ^\\d+\\.\\d+$, got "12"',
      ])
      await rejected(onGpu({ pools: ['ADA_24'], allowedCudaVersions: ['12.4', 'v12.4', '12.4.1'] }), 422, [
        'gpu.allowedCudaVersions[1]: must match ^\\d+\\.\\d+$, got "v12.4"',
        'gpu.allowedCudaVersions[2]: must match ^\\d+\\.\\d+$, got "12.4.1"',
      ])
    })
    it('keeps versions as written, so 12.10 stays 12.10 and 12.11 is not read as a decimal', async () => {
      const ep = await created(onGpu({ pools: ['ADA_24'], minCudaVersion: '12.10' }))
      expect(ep.gpu.minCudaVersion).toBe('12.10')
      const ep2 = await created(onGpu({ pools: ['ADA_24'], allowedCudaVersions: ['12.11', '12.2'] }))
      expect(ep2.gpu.allowedCudaVersions).toEqual(['12.11', '12.2'])
    })
  })

  describe('R7 pools and excludedTypes', () => {
    it('requires at least one pool (422)', async () => {
      await rejected(onGpu({ pools: [] }), 422, ['gpu.pools: must NOT have fewer than 1 items'])
      await rejected(onGpu({}), 422, ['gpu.pools: is required'])
    })
    it('rejects ids that are not serverless pools, such as GPU type ids (400)', async () => {
      await rejected(onGpu({ pools: ['ADA_24', 'NVIDIA L4', 'NOPE'] }), 400, [
        expect.stringMatching(/^gpu\.pools\[1\]: "NVIDIA L4" is not a serverless GPU pool; pools are .*ADA_24/),
        expect.stringMatching(/^gpu\.pools\[2\]: "NOPE" is not a serverless GPU pool/),
      ])
    })
    it('rejects an excluded type outside the pools (400)', async () => {
      await rejected(onGpu({ pools: ['ADA_24', 'AMPERE_24'], excludedTypes: ['NVIDIA L4', 'NVIDIA A40'] }), 400, [
        'gpu.excludedTypes[1]: "NVIDIA A40" is not a GPU type in pools ADA_24, AMPERE_24',
      ])
    })
    it('requires a type to remain selected (400)', async () => {
      await rejected(onGpu({ pools: ['ADA_24'], excludedTypes: ['NVIDIA GeForce RTX 4090', 'NVIDIA L4'] }), 400, [
        'gpu.excludedTypes: excludes every GPU type of pools ADA_24; at least one type must remain selected',
      ])
    })
    it('rejects empty, hyphen-led and repeated exclusions (422)', async () => {
      await rejected(
        onGpu({ pools: ['ADA_24'], excludedTypes: ['  ', '-NVIDIA L4', 'NVIDIA L4', ' NVIDIA L4'] }),
        422,
        [
          'gpu.excludedTypes[0]: must not be empty after trimming, got "  "',
          'gpu.excludedTypes[1]: must not start with "-", got "-NVIDIA L4"',
          'gpu.excludedTypes[3]: "NVIDIA L4" is listed more than once',
        ],
      )
      await rejected(onGpu({ pools: ['ADA_24'], excludedTypes: ['NVIDIA L4', 'NVIDIA L4'] }), 422, [
        expect.stringMatching(/^gpu\.excludedTypes: must not contain duplicates \(items [01] and [01] are equal\)$/),
      ])
    })
    it('trims exclusions and stores them with the pools', async () => {
      const ep = await created(onGpu({ pools: ['ADA_24', 'AMPERE_48'], excludedTypes: ['  NVIDIA L4\t'] }))
      expect(ep.gpu).toMatchObject({ pools: ['ADA_24', 'AMPERE_48'], excludedTypes: ['NVIDIA L4'] })
    })
  })

  describe('R8 gpu.count and the response form of gpu', () => {
    it('defaults count to 1 and always returns every constraint', async () => {
      const ep = await created(onGpu({ pools: ['AMPERE_48'] }))
      expect(ep.gpu).toEqual({
        pools: ['AMPERE_48'],
        count: 1,
        allowedCudaVersions: [],
        minCudaVersion: null,
        excludedTypes: [],
      })
    })
    it('keeps an explicit count and refuses 0 or a fraction (422)', async () => {
      expect((await created(onGpu({ pools: ['ADA_24'], count: 2 }))).gpu.count).toBe(2)
      await rejected(onGpu({ pools: ['ADA_24'], count: 1.5 }), 422, ['gpu.count: must be integer, got number'])
    })
    it('refuses a count no selected GPU type offers (400), instead of queueing forever', async () => {
      expect((await created(onGpu({ pools: ['ADA_24'], count: 8 }))).gpu.count).toBe(8)
      await rejected(onGpu({ pools: ['ADA_24'], count: 99 }), 400, [
        'gpu.count: 99 GPUs per worker is more than any selected GPU type offers (at most 8)',
      ])
    })
  })

  describe('R9 cpu', () => {
    it('requires at least one item and rejects exact duplicates (422)', async () => {
      await rejected(onCpu([]), 422, ['cpu: must NOT have fewer than 1 items'])
      await rejected(
        onCpu([
          { id: 'cpu3c', vcpuCount: 2 },
          { id: 'cpu3c', vcpuCount: 2 },
        ]),
        422,
        ['cpu: must not contain duplicates (items 0 and 1 are equal)'],
      )
    })
    it('accepts one flavor with different vCPU counts, in submitted order, with memory derived', async () => {
      const ep = await created(
        onCpu([
          { id: 'cpu3g', vcpuCount: 4 },
          { id: 'cpu3c', vcpuCount: 2 },
          { id: 'cpu3g', vcpuCount: 8 },
        ]),
      )
      expect(ep.cpu).toEqual([
        { id: 'cpu3g', vcpuCount: 4, memory: 16 },
        { id: 'cpu3c', vcpuCount: 2, memory: 4 },
        { id: 'cpu3g', vcpuCount: 8, memory: 32 },
      ])
    })
    it('rejects a vcpuCount below 2 or not a power of two (422), and memory from clients', async () => {
      await rejected(
        onCpu([
          { id: 'cpu3c', vcpuCount: 1 },
          { id: 'cpu3c', vcpuCount: 6, memory: 12 },
        ]),
        422,
        [
          'cpu[0].vcpuCount: must be >= 2',
          "cpu[1]: additional properties 'memory' not allowed",
          // A schema rule like the others, so it is reported with them.
          'cpu[1].vcpuCount: must be a power of two, got 6',
        ],
      )
      await rejected(onCpu([{ id: 'cpu3c', vcpuCount: 6 }]), 422, ['cpu[0].vcpuCount: must be a power of two, got 6'])
    })
    it('rejects an unknown flavor or a count outside the flavor (400)', async () => {
      await rejected(
        onCpu([
          { id: 'cpu9x', vcpuCount: 2 },
          { id: 'cpu3m', vcpuCount: 32 },
        ]),
        400,
        [
          'cpu[0].id: "cpu9x" is not a CPU flavor; see /v2/catalog/cpus',
          'cpu[1].vcpuCount: 32 is outside the range of cpu3m, 2 to 16',
        ],
      )
    })
  })
})
