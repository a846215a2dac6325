import { describe, expect, it } from 'vitest'
import type { CreateEndpoint, UpdateEndpoint } from '../../contract/endpoint.js'
import { compareCuda } from '../cuda.js'
import type { EndpointRecord } from './endpoint.js'
import { createSpec, cudaOutsideGpu, updateSpec, type RuleContext, type TemplateView } from './endpointRules.js'
import { selectedGpuTypes } from './endpointRulesGpu.js'
import { releaseDiff } from './endpointRulesRelease.js'
import { DomainError } from '../errors.js'

const catalog: RuleContext['catalog'] = {
  pools: new Map([
    ['ADA_24', ['NVIDIA GeForce RTX 4090', 'NVIDIA L4']],
    ['AMPERE_48', ['NVIDIA RTX A6000', 'NVIDIA A40']],
  ]),
  cpuFlavor: (id) =>
    ({ cpu3c: { vcpu: { min: 2, max: 32 }, ramGbPerVcpu: 2 }, cpu3m: { vcpu: { min: 2, max: 16 }, ramGbPerVcpu: 8 } })[
      id
    ],
  hasDataCenter: (id) => id === 'LOCAL-1',
}
const account: RuleContext['account'] = {
  volumes: new Map([['nv1', { dataCenter: 'LOCAL-1' }]]),
  registries: new Set(['reg1']),
}
const ctx: RuleContext = { catalog, account, template: null }
const template: TemplateView = {
  id: 'tpl',
  serverless: true,
  image: 'tpl:1',
  args: 'python h.py',
  cmd: ['python', 'h.py'],
  entrypoint: [],
  disk: 20,
  ports: ['8000/http'],
  env: { A: 'tpl', B: 'tpl' },
  registry: null,
  allowedCudaVersions: ['12.4'],
}

const base: CreateEndpoint = {
  name: 'ep',
  type: 'QUEUE',
  scaling: { type: 'QUEUE_DELAY', queueDelay: 2 },
  image: 'img:1',
  gpu: { pools: ['ADA_24'] },
}
const cpuBase: CreateEndpoint = { ...base, gpu: undefined, cpu: [{ id: 'cpu3c', vcpuCount: 2 }] }

/** The error a rule throws, as `[status kind, errors]`. */
function failure(fn: () => unknown): [string, string[]] {
  try {
    fn()
  } catch (err) {
    if (err instanceof DomainError) return [err.kind, err.errors ?? [err.detail]]
    throw err
  }
  throw new Error('expected a DomainError')
}

describe('createSpec', () => {
  it('fills every default', () => {
    expect(createSpec(base, ctx)).toEqual({
      name: 'ep',
      type: 'QUEUE',
      image: 'img:1',
      args: '',
      cmd: [],
      entrypoint: [],
      disk: 10,
      env: {},
      ports: [],
      registry: null,
      gpu: { pools: ['ADA_24'], count: 1, allowedCudaVersions: [], minCudaVersion: null, excludedTypes: [] },
      workers: { min: 0, max: 3, idleTimeout: 10 },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 2 },
      dataCenterIds: [],
      networkVolumes: [],
      timeout: 300000,
      flashboot: 'OFF',
      templateId: null,
    })
  })

  const rejects: Array<[string, CreateEndpoint, RuleContext, string, string[]]> = [
    [
      'a port past 65535 or 0',
      { ...base, ports: ['99999/http', '8000/http', '0/tcp'] },
      ctx,
      'unprocessable',
      ['ports[0]: "99999/http": the port must be 1 to 65535', 'ports[2]: "0/tcp": the port must be 1 to 65535'],
    ],
    [
      'R2 neither gpu nor cpu',
      { ...base, gpu: undefined },
      ctx,
      'bad_request',
      ['$: exactly one of gpu or cpu must be set; neither was sent'],
    ],
    [
      'R2 both',
      { ...base, cpu: [{ id: 'cpu3c', vcpuCount: 2 }] },
      ctx,
      'bad_request',
      ['$: exactly one of gpu or cpu must be set; both were sent'],
    ],
    [
      'R4 allowed list with a floor',
      { ...base, gpu: { pools: ['ADA_24'], allowedCudaVersions: ['12.4'], minCudaVersion: '12.1' } },
      ctx,
      'bad_request',
      [
        'gpu.allowedCudaVersions: ["12.4"] cannot be combined with gpu.minCudaVersion "12.1": use one or the other (allowedCudaVersions [] means any)',
      ],
    ],
    [
      'R6 image missing',
      { ...base, image: undefined },
      ctx,
      'unprocessable',
      ['image: is required unless templateId is set'],
    ],
    [
      'R6 pod template',
      { ...base, image: undefined },
      { ...ctx, template: { ...template, serverless: false } },
      'unprocessable',
      ['templateId: template "tpl" is a pod template, not a serverless one'],
    ],
    [
      'R7 unknown pool',
      { ...base, gpu: { pools: ['X'] } },
      ctx,
      'bad_request',
      ['gpu.pools[0]: "X" is not a serverless GPU pool; pools are ADA_24, AMPERE_48'],
    ],
    [
      'R7 exclusion outside pools',
      { ...base, gpu: { pools: ['ADA_24'], excludedTypes: ['NVIDIA A40'] } },
      ctx,
      'bad_request',
      ['gpu.excludedTypes[0]: "NVIDIA A40" is not a GPU type in pools ADA_24'],
    ],
    [
      'R7 nothing left',
      { ...base, gpu: { pools: ['ADA_24'], excludedTypes: ['NVIDIA L4', 'NVIDIA GeForce RTX 4090'] } },
      ctx,
      'bad_request',
      ['gpu.excludedTypes: excludes every GPU type of pools ADA_24; at least one type must remain selected'],
    ],
    [
      'R7 hyphen',
      { ...base, gpu: { pools: ['ADA_24'], excludedTypes: [' -x'] } },
      ctx,
      'unprocessable',
      ['gpu.excludedTypes[0]: must not start with "-", got " -x"'],
    ],
    [
      'R9 not a power of two',
      { ...cpuBase, cpu: [{ id: 'cpu3c', vcpuCount: 24 }] },
      ctx,
      'unprocessable',
      ['cpu[0].vcpuCount: must be a power of two, got 24'],
    ],
    [
      'R9 outside flavor',
      { ...cpuBase, cpu: [{ id: 'cpu3m', vcpuCount: 32 }] },
      ctx,
      'bad_request',
      ['cpu[0].vcpuCount: 32 is outside the range of cpu3m, 2 to 16'],
    ],
    [
      'R9 unknown flavor',
      { ...cpuBase, cpu: [{ id: 'zz', vcpuCount: 2 }] },
      ctx,
      'bad_request',
      ['cpu[0].id: "zz" is not a CPU flavor; see /v2/catalog/cpus'],
    ],
    [
      'R10 load balancer on queue delay',
      { ...base, type: 'LOAD_BALANCER' },
      ctx,
      'bad_request',
      [
        'scaling.type: a LOAD_BALANCER endpoint requires REQUEST_COUNT scaling; QUEUE_DELAY applies to QUEUE endpoints only',
      ],
    ],
    [
      'R10 idleTimeout with REQUEST_COUNT',
      { ...base, scaling: { type: 'REQUEST_COUNT', requestCount: 1 }, workers: { idleTimeout: 5 } },
      ctx,
      'bad_request',
      [
        'workers.idleTimeout: is not used by a QUEUE endpoint scaling on REQUEST_COUNT; omit it (it applies to QUEUE_DELAY scaling and to LOAD_BALANCER endpoints)',
      ],
    ],
    [
      'R11 min above default max',
      { ...base, workers: { min: 4 } },
      ctx,
      'bad_request',
      ['workers.min: 4 is above workers.max 3 (the default)'],
    ],
    [
      'R12 unknown registry',
      { ...base, registry: 'reg2' },
      ctx,
      'bad_request',
      ['registry: "reg2" is not one of your container registry credentials; see /v2/registries'],
    ],
    [
      'R12 args against cmd',
      { ...base, args: 'a b', cmd: ['a'] },
      ctx,
      'bad_request',
      ['cmd: ["a"] disagrees with args, which describes cmd ["a","b"]'],
    ],
    [
      'R13 unknown data center',
      { ...base, dataCenterIds: ['X-1'] },
      ctx,
      'bad_request',
      ['dataCenterIds[0]: "X-1" is not a data center; see /v2/catalog/datacenters'],
    ],
    [
      'R13 foreign volume',
      { ...base, networkVolumes: ['nv2'] },
      ctx,
      'bad_request',
      ['networkVolumes[0]: "nv2" is not one of your network volumes; see /v2/network-volumes'],
    ],
  ]
  it.each(rejects)('rejects: %s', (_name, body, context, kind, errors) => {
    expect(failure(() => createSpec(body, context))).toEqual([kind, errors])
  })

  it('collects every violation of a class in one answer', () => {
    const body: CreateEndpoint = {
      ...base,
      type: 'LOAD_BALANCER',
      gpu: { pools: ['X'] },
      workers: { min: 9 },
      dataCenterIds: ['nowhere'],
    }
    expect(failure(() => createSpec(body, ctx))[1]).toHaveLength(4)
  })

  it('requires a volume to be in one of the listed data centers', () => {
    const c = {
      ...ctx,
      catalog: { ...catalog, hasDataCenter: () => true },
      account: { ...account, volumes: new Map([['nv1', { dataCenter: 'EU-1' }]]) },
    }
    expect(createSpec({ ...base, networkVolumes: ['nv1'] }, c).networkVolumes).toEqual(['nv1'])
    expect(failure(() => createSpec({ ...base, networkVolumes: ['nv1'], dataCenterIds: ['LOCAL-1'] }, c))).toEqual([
      'bad_request',
      ['networkVolumes[0]: volume "nv1" is in data center EU-1, which dataCenterIds does not include'],
    ])
  })

  it.each<[string, CreateEndpoint['gpu'], string[], string | null]>([
    ['seeds from the template when both CUDA fields are omitted', { pools: ['ADA_24'] }, ['12.4'], null],
    ['does not seed next to a floor', { pools: ['ADA_24'], minCudaVersion: '12.2' }, [], '12.2'],
    ['keeps an explicit list', { pools: ['ADA_24'], allowedCudaVersions: ['11.8'] }, ['11.8'], null],
    ['keeps an explicit empty list', { pools: ['ADA_24'], allowedCudaVersions: [] }, [], null],
  ])('R6 template CUDA: %s', (_name, gpu, allowed, min) => {
    const spec = createSpec({ ...base, image: undefined, gpu }, { ...ctx, template })
    expect(spec.gpu).toMatchObject({ allowedCudaVersions: allowed, minCudaVersion: min })
  })

  it('R6 copies the template and lets the body win, merging env', () => {
    const spec = createSpec({ ...base, image: undefined, env: { B: 'body', C: 'body' }, disk: 5 }, { ...ctx, template })
    expect(spec).toMatchObject({
      image: 'tpl:1',
      args: 'python h.py',
      cmd: ['python', 'h.py'],
      disk: 5,
      ports: ['8000/http'],
      env: { A: 'tpl', B: 'body', C: 'body' },
      templateId: 'tpl',
    })
  })

  it('R9 derives memory from the flavor, in submitted order', () => {
    expect(
      createSpec(
        {
          ...cpuBase,
          cpu: [
            { id: 'cpu3m', vcpuCount: 4 },
            { id: 'cpu3c', vcpuCount: 2 },
          ],
        },
        ctx,
      ).cpu,
    ).toEqual([
      { id: 'cpu3m', vcpuCount: 4, memory: 32 },
      { id: 'cpu3c', vcpuCount: 2, memory: 4 },
    ])
  })
})

describe('updateSpec', () => {
  const current: EndpointRecord = {
    ...createSpec(
      { ...base, gpu: { pools: ['ADA_24', 'AMPERE_48'], excludedTypes: ['NVIDIA L4'], minCudaVersion: '12.1' } },
      ctx,
    ),
    id: 'ep1',
    accountId: 'acc',
    createdAt: '2026-01-01T00:00:00.000Z',
    version: 1,
  }
  const gpuAfter = (body: UpdateEndpoint) => updateSpec(current, body, ctx).gpu

  it.each<[string, UpdateEndpoint, object]>([
    [
      'pools alone clear the exclusions',
      { gpu: { pools: ['AMPERE_48'] } },
      { pools: ['AMPERE_48'], excludedTypes: [] },
    ],
    [
      'pools and exclusions replace together',
      { gpu: { pools: ['AMPERE_48'], excludedTypes: ['NVIDIA A40'] } },
      { pools: ['AMPERE_48'], excludedTypes: ['NVIDIA A40'] },
    ],
    [
      'omitting pools keeps the selection',
      { gpu: { count: 3 } },
      { pools: ['ADA_24', 'AMPERE_48'], excludedTypes: ['NVIDIA L4'], count: 3 },
    ],
    ['"" clears the floor', { gpu: { minCudaVersion: '' } }, { minCudaVersion: null }],
    [
      'both CUDA fields switch together',
      { gpu: { allowedCudaVersions: ['12.4'], minCudaVersion: '' } },
      { allowedCudaVersions: ['12.4'], minCudaVersion: null },
    ],
  ])('R14 gpu: %s', (_name, body, expected) => {
    expect(gpuAfter(body)).toMatchObject(expected)
  })

  it.each<[string, UpdateEndpoint, string[]]>([
    [
      'excludedTypes without pools',
      { gpu: { excludedTypes: ['NVIDIA A40'] } },
      [
        'gpu.excludedTypes: can only be sent together with gpu.pools: pools and excludedTypes are replaced as one selection',
      ],
    ],
    [
      'a list next to the kept floor',
      { gpu: { allowedCudaVersions: ['12.4'] } },
      [
        'gpu.allowedCudaVersions: ["12.4"] cannot be combined with gpu.minCudaVersion "12.1": use one or the other (allowedCudaVersions [] means any)',
      ],
    ],
    [
      'cpu on a GPU endpoint',
      { cpu: [{ id: 'cpu3c', vcpuCount: 2 }] },
      ['cpu: this is a GPU endpoint: it has a gpu configuration and cannot take cpu flavors'],
    ],
    ['max below the kept min', { workers: { min: 2, max: 1 } }, ['workers.min: 2 is above workers.max 1']],
  ])('R14 rejects %s (400)', (_name, body, errors) => {
    expect(failure(() => updateSpec(current, body, ctx))).toEqual(['bad_request', errors])
  })

  it('drops idleTimeout when a queue endpoint moves to REQUEST_COUNT and restores the default on the way back', () => {
    const onRequests = updateSpec(current, { scaling: { type: 'REQUEST_COUNT', requestCount: 2 } }, ctx)
    expect(onRequests.workers).toEqual({ min: 0, max: 3 })
    const back = updateSpec({ ...current, ...onRequests }, { scaling: { type: 'QUEUE_DELAY', queueDelay: 1 } }, ctx)
    expect(back.workers).toEqual({ min: 0, max: 3, idleTimeout: 10 })
  })
})

describe('cudaOutsideGpu (R3)', () => {
  it.each<[string, unknown, string[]]>([
    [
      'CUDA-only gpu next to cpu',
      { cpu: [], gpu: { minCudaVersion: '12.4' } },
      ['gpu.minCudaVersion: CUDA constraints apply only to GPU endpoints, and this create sets cpu'],
    ],
    ['a full gpu next to cpu is R2, not R3', { cpu: [], gpu: { pools: ['A'], minCudaVersion: '12.4' } }, []],
    ['CUDA fields on a GPU create', { gpu: { minCudaVersion: '12.4' } }, []],
    ['not an object', 'text', []],
  ])('%s', (_name, body, errors) => {
    expect(cudaOutsideGpu(body)).toEqual(errors)
  })
})

describe('CUDA and GPU selection helpers', () => {
  it('R5 compares versions numerically: 12.11 is above 12.2', () => {
    expect(compareCuda('12.11', '12.2')).toBeGreaterThan(0)
    expect(compareCuda('12.2', '12.11')).toBeLessThan(0)
  })
  it('selects the pools\u2019 types minus the exclusions, in pool order', () => {
    expect(selectedGpuTypes({ pools: ['AMPERE_48', 'ADA_24'], excludedTypes: ['NVIDIA A40'] }, catalog.pools)).toEqual([
      'NVIDIA RTX A6000',
      'NVIDIA GeForce RTX 4090',
      'NVIDIA L4',
    ])
  })
})

describe('releaseDiff', () => {
  const spec = createSpec(base, ctx)
  it.each<[string, object, Array<{ field: string; old: unknown; new: unknown }>]>([
    ['image', { image: 'img:2' }, [{ field: 'image', old: 'img:1', new: 'img:2' }]],
    ['env per key', { env: { X: '1' } }, [{ field: 'env.X', old: null, new: '1' }]],
    ['gpu field', { gpu: { ...spec.gpu!, count: 2 } }, [{ field: 'gpu.count', old: 1, new: 2 }]],
    [
      'not for name, workers, scaling, timeout, flashboot or args',
      {
        name: 'x',
        workers: { min: 1, max: 3 },
        scaling: { type: 'REQUEST_COUNT', requestCount: 1 },
        timeout: 1,
        flashboot: 'FLASHBOOT',
        args: ' ',
      },
      [],
    ],
  ])('%s', (_name, change, diff) => {
    expect(releaseDiff(spec, { ...spec, ...change })).toEqual(diff)
  })
})
