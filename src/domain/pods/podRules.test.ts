import { describe, expect, it } from 'vitest'
import type { CreatePod, UpdatePod } from '../../contract/pod.js'
import { DomainError } from '../errors.js'
import { actionRefusal, podActions, type PodRecord } from './pod.js'
import { podPlacementRequest } from './podPlacement.js'
import { changesWhatRuns, createPodSpec, updatePodSpec, type PodRuleContext, type PodTemplateView } from './podRules.js'
import { podCost, toPod } from './podView.js'

const catalog: PodRuleContext['catalog'] = {
  gpuType: (id) =>
    ({
      'NVIDIA L4': { manufacturer: 'NVIDIA', maxCount: 8 },
      'NVIDIA H100 80GB HBM3': { manufacturer: 'NVIDIA', maxCount: 2 },
      'AMD Instinct MI300X OAM': { manufacturer: 'AMD', maxCount: 8 },
    })[id],
  cpuFlavor: (id) => ({ cpu3c: { vcpu: { min: 2, max: 32 }, ramGbPerVcpu: 2 } })[id],
  dataCenter: (id) => ({ 'LOCAL-1': { globalNetwork: false }, 'GLOBAL-1': { globalNetwork: true } })[id],
  dataCenterIds: () => ['LOCAL-1', 'GLOBAL-1'],
}
const ctx: PodRuleContext = {
  catalog,
  volumes: new Map([['vol1', { dataCenter: 'LOCAL-1' }]]),
  registries: new Set(['reg1']),
  template: null,
  sshKeys: ['ssh-ed25519 AAAA me@laptop'],
  newPassword: () => 'pw',
}
const template: PodTemplateView = {
  id: 'tpl',
  serverless: false,
  image: 'tpl:1',
  args: '',
  cmd: [],
  entrypoint: [],
  disk: 30,
  ports: ['8888/http', '22/tcp'],
  env: { A: 'tpl', B: 'tpl' },
  registry: null,
  allowedCudaVersions: ['12.4'],
  mounts: { persistent: { size: 20, path: '/workspace' } },
  startSsh: true,
  startJupyter: true,
}
const gpuBody: CreatePod = { name: 'p', image: 'img:1', gpu: { id: 'NVIDIA L4' } }
const cpuBody: CreatePod = { name: 'p', image: 'img:1', cpu: { id: 'cpu3c', vcpuCount: 2 } }

function failure(fn: () => unknown): [string, string[]] {
  try {
    fn()
  } catch (err) {
    if (err instanceof DomainError) return [err.kind, err.errors ?? [err.detail]]
    throw err
  }
  throw new Error('expected a DomainError')
}

function record(over: Partial<PodRecord> = {}): PodRecord {
  return {
    ...createPodSpec(gpuBody, ctx),
    id: 'pod_1',
    accountId: 'acc',
    createdAt: '2026-01-01T00:00:00.000Z',
    status: 'RUNNING',
    placement: { hostId: 'local', dataCenterId: 'LOCAL-1', gpuIndices: [0], cudaVersion: '12.4', virtual: true },
    runtimeRef: 'process:x',
    portMappings: [],
    startedAt: '2026-01-01T00:00:00.000Z',
    lastError: null,
    cluster: null,
    ...over,
  }
}

describe('createPodSpec', () => {
  it('fills every default', () => {
    expect(createPodSpec(gpuBody, ctx)).toEqual({
      name: 'p',
      image: 'img:1',
      args: '',
      cmd: [],
      entrypoint: [],
      disk: 20,
      env: {},
      ports: [],
      registry: null,
      cloud: 'SECURE',
      dataCenterIds: [],
      globalNetworking: false,
      gpu: { id: 'NVIDIA L4', count: 1, allowedCudaVersions: [], minCudaVersion: null },
      cpu: null,
      mounts: {},
      locked: false,
    })
  })

  it('derives CPU memory from the flavor', () => {
    expect(createPodSpec(cpuBody, ctx).cpu).toEqual({ id: 'cpu3c', vcpuCount: 2, memory: 4 })
  })

  it('applies a template: body wins, env merged per key, mount and CUDA seeded, flags inject env', () => {
    const spec = createPodSpec(
      { name: 'p', templateId: 'tpl', env: { B: 'body' }, gpu: { id: 'NVIDIA L4' } },
      { ...ctx, template },
    )
    expect(spec).toMatchObject({
      image: 'tpl:1',
      disk: 30,
      ports: ['8888/http', '22/tcp'],
      mounts: { persistent: { size: 20, path: '/workspace' } },
    })
    expect(spec.env).toEqual({ A: 'tpl', B: 'body', PUBLIC_KEY: 'ssh-ed25519 AAAA me@laptop', JUPYTER_PASSWORD: 'pw' })
    expect(spec.gpu!.allowedCudaVersions).toEqual(['12.4'])
  })

  it('lets a CUDA field of the body replace the template constraint', () => {
    const spec = createPodSpec(
      { name: 'p', templateId: 'tpl', gpu: { id: 'NVIDIA L4', minCudaVersion: '12.2' } },
      { ...ctx, template },
    )
    expect(spec.gpu).toMatchObject({ allowedCudaVersions: [], minCudaVersion: '12.2' })
  })

  it('ignores the template mount and CUDA on a CPU pod', () => {
    const spec = createPodSpec(
      { name: 'p', templateId: 'tpl', cpu: { id: 'cpu3c', vcpuCount: 2 } },
      { ...ctx, template },
    )
    expect(spec.mounts).toEqual({})
    expect(spec.gpu).toBeNull()
  })

  it('keeps PUBLIC_KEY and JUPYTER_PASSWORD the env sets, and injects none without keys', () => {
    const spec = createPodSpec(
      { ...gpuBody, startSsh: true, startJupyter: true, env: { PUBLIC_KEY: 'mine', JUPYTER_PASSWORD: 'mine' } },
      ctx,
    )
    expect(spec.env).toEqual({ PUBLIC_KEY: 'mine', JUPYTER_PASSWORD: 'mine' })
    expect(createPodSpec({ ...gpuBody, startSsh: true }, { ...ctx, sshKeys: [] }).env).toEqual({})
  })

  const cases: Array<[string, CreatePod, Partial<PodRuleContext>, string, string[]]> = [
    [
      'neither gpu nor cpu',
      { name: 'p', image: 'i' },
      {},
      'bad_request',
      ['$: exactly one of gpu or cpu must be set; neither was sent'],
    ],
    [
      'both gpu and cpu',
      { ...gpuBody, cpu: cpuBody.cpu },
      {},
      'bad_request',
      ['$: exactly one of gpu or cpu must be set; both were sent'],
    ],
    [
      'no image, no template',
      { name: 'p', gpu: { id: 'NVIDIA L4' } },
      {},
      'unprocessable',
      ['image: is required unless templateId is set'],
    ],
    [
      'a serverless template',
      { name: 'p', templateId: 'tpl', gpu: { id: 'NVIDIA L4' } },
      { template: { ...template, serverless: true } },
      'unprocessable',
      ['templateId: template "tpl" is a serverless template, not a pod template'],
    ],
    [
      'an unknown GPU type',
      { ...gpuBody, gpu: { id: 'NVIDIA X' } },
      {},
      'bad_request',
      ['gpu.id: "NVIDIA X" is not a GPU type; see /v2/catalog/gpus'],
    ],
    [
      'too many GPUs',
      { ...gpuBody, gpu: { id: 'NVIDIA H100 80GB HBM3', count: 3 } },
      {},
      'bad_request',
      ['gpu.count: 3 is more than NVIDIA H100 80GB HBM3 offers per pod (at most 2)'],
    ],
    [
      'allowedCudaVersions with minCudaVersion',
      { ...gpuBody, gpu: { id: 'NVIDIA L4', allowedCudaVersions: ['12.4'], minCudaVersion: '12.2' } },
      {},
      'bad_request',
      [
        'gpu.allowedCudaVersions: ["12.4"] cannot be combined with gpu.minCudaVersion "12.2": use one or the other (allowedCudaVersions [] means any)',
      ],
    ],
    [
      'a vCPU count that is not a power of two',
      { ...cpuBody, cpu: { id: 'cpu3c', vcpuCount: 6 } },
      {},
      'unprocessable',
      ['cpu.vcpuCount: must be a power of two, got 6'],
    ],
    [
      'an unknown CPU flavor',
      { ...cpuBody, cpu: { id: 'cpuX', vcpuCount: 2 } },
      {},
      'bad_request',
      ['cpu.id: "cpuX" is not a CPU flavor; see /v2/catalog/cpus'],
    ],
    [
      'a vCPU count outside the flavor',
      { ...cpuBody, cpu: { id: 'cpu3c', vcpuCount: 64 } },
      {},
      'bad_request',
      ['cpu.vcpuCount: 64 is outside the range of cpu3c, 2 to 32'],
    ],
    [
      'both mount kinds',
      { ...gpuBody, mounts: { persistent: { size: 10, path: '/w' }, network: [{ volumeId: 'vol1', path: '/v' }] } },
      {},
      'bad_request',
      ['mounts: set either persistent or network, not both'],
    ],
    [
      'an empty network array',
      { ...gpuBody, mounts: { network: [] } },
      {},
      'bad_request',
      ['mounts.network: must not be an empty array; omit it for no network volume'],
    ],
    [
      'a persistent mount on a CPU pod',
      { ...cpuBody, mounts: { persistent: { size: 10, path: '/w' } } },
      {},
      'bad_request',
      ['mounts.persistent: CPU pods support only the container disk and network volumes'],
    ],
    [
      'a foreign network volume',
      { ...gpuBody, mounts: { network: [{ volumeId: 'volX', path: '/v' }] } },
      {},
      'bad_request',
      ['mounts.network[0].volumeId: "volX" is not one of your network volumes; see /v2/network-volumes'],
    ],
    [
      'a volume outside dataCenterIds',
      { ...gpuBody, dataCenterIds: ['GLOBAL-1'], mounts: { network: [{ volumeId: 'vol1', path: '/v' }] } },
      {},
      'bad_request',
      ['mounts.network[0].volumeId: volume "vol1" is in data center LOCAL-1, which dataCenterIds does not include'],
    ],
    [
      'an unknown data center',
      { ...gpuBody, dataCenterIds: ['NOPE'] },
      {},
      'bad_request',
      ['dataCenterIds[0]: "NOPE" is not a data center; see /v2/catalog/datacenters'],
    ],
    [
      'global networking on a CPU pod',
      { ...cpuBody, globalNetworking: true },
      {},
      'bad_request',
      ['globalNetworking: needs an NVIDIA GPU pod; this is a CPU pod'],
    ],
    [
      'global networking on an AMD GPU',
      { ...gpuBody, gpu: { id: 'AMD Instinct MI300X OAM' }, globalNetworking: true },
      {},
      'bad_request',
      ['globalNetworking: needs an NVIDIA GPU; AMD Instinct MI300X OAM is not one'],
    ],
    [
      'global networking where no data center offers it',
      { ...gpuBody, dataCenterIds: ['LOCAL-1'], globalNetworking: true },
      {},
      'bad_request',
      [
        'globalNetworking: no data center in dataCenterIds supports global networking (globalNetwork in /v2/catalog/datacenters)',
      ],
    ],
    [
      'a foreign registry',
      { ...gpuBody, registry: 'regX' },
      {},
      'bad_request',
      ['registry: "regX" is not one of your container registry credentials; see /v2/registries'],
    ],
    [
      'a udp port',
      { ...gpuBody, ports: ['53/udp'] },
      {},
      'unprocessable',
      ['ports[0]: "53/udp": pods expose http or tcp ports'],
    ],
    [
      'a port listed twice',
      { ...gpuBody, ports: ['80/http', '80/tcp'] },
      {},
      'unprocessable',
      ['ports[1]: port 80 is listed more than once (also ports[0])'],
    ],
  ]
  for (const [name, body, over, kind, errors] of cases) {
    it(`refuses ${name}`, () => {
      expect(failure(() => createPodSpec(body, { ...ctx, ...over }))).toEqual([kind, errors])
    })
  }

  it('accepts global networking where a data center offers it', () => {
    expect(createPodSpec({ ...gpuBody, globalNetworking: true }, ctx).globalNetworking).toBe(true)
  })
})

describe('updatePodSpec', () => {
  const withVolume = record({ mounts: { network: [{ volumeId: 'vol1', path: '/v' }] } })
  const withDisk = record({ mounts: { persistent: { size: 20, path: '/workspace' } } })
  const cases: Array<[string, PodRecord, UpdatePod, string, string[]]> = [
    [
      'an explicit empty network array',
      withVolume,
      { mounts: { network: [] } },
      'bad_request',
      [
        'mounts.network: must not be an empty array: a network volume cannot be detached by PATCH; omit mounts to leave it',
      ],
    ],
    [
      'a network mount on a pod created without one',
      withDisk,
      { mounts: { network: [{ volumeId: 'vol1', path: '/v' }] } },
      'bad_request',
      ['mounts.network: this pod was created without a network volume; a mount kind cannot be added later'],
    ],
    [
      'a persistent mount on a pod created without one',
      withVolume,
      { mounts: { persistent: { size: 10, path: '/w' } } },
      'bad_request',
      ['mounts.persistent: this pod was created without a persistent mount; a mount kind cannot be added later'],
    ],
    [
      'a changed volumeId',
      withVolume,
      { mounts: { network: [{ volumeId: 'vol2', path: '/v' }] } },
      'bad_request',
      ['mounts.network[0].volumeId: cannot change from "vol1" to "vol2"; only the path can change'],
    ],
    [
      'a smaller persistent mount',
      withDisk,
      { mounts: { persistent: { size: 10, path: '/workspace' } } },
      'bad_request',
      ['mounts.persistent.size: cannot shrink from 20 GB to 10 GB'],
    ],
    [
      'a serverless template',
      withDisk,
      { templateId: 'tpl' },
      'unprocessable',
      ['templateId: template "tpl" is a serverless template, not a pod template'],
    ],
  ]
  for (const [name, current, body, kind, errors] of cases) {
    it(`refuses ${name}`, () => {
      const t = body.templateId ? { ...template, serverless: true } : null
      expect(failure(() => updatePodSpec(current, body, { ...ctx, template: t }))).toEqual([kind, errors])
    })
  }

  it('leaves mounts alone when omitted or {}', () => {
    expect(updatePodSpec(withVolume, {}, ctx).mounts).toEqual(withVolume.mounts)
    expect(updatePodSpec(withVolume, { mounts: {} }, ctx).mounts).toEqual(withVolume.mounts)
    expect(
      updatePodSpec(withVolume, { mounts: { network: [{ volumeId: 'vol1', path: '/data' }] } }, ctx).mounts,
    ).toEqual({ network: [{ volumeId: 'vol1', path: '/data' }] })
  })

  it('applies a template once: container settings, env replaced by the merge, never its mount', () => {
    const current = record({ env: { OLD: '1' } })
    const spec = updatePodSpec(current, { templateId: 'tpl', env: { B: 'body' } }, { ...ctx, template })
    expect(spec).toMatchObject({
      image: 'tpl:1',
      disk: 30,
      ports: ['8888/http', '22/tcp'],
      env: { A: 'tpl', B: 'body' },
      mounts: {},
    })
  })

  it('tells a change to what runs from one that does not', () => {
    const current = record()
    expect(changesWhatRuns(current, updatePodSpec(current, { name: 'n', locked: true }, ctx))).toBe(false)
    expect(changesWhatRuns(current, updatePodSpec(current, { env: { X: '1' } }, ctx))).toBe(true)
    expect(changesWhatRuns(current, updatePodSpec(current, { image: 'other:2' }, ctx))).toBe(true)
  })
})

describe('actions', () => {
  it('follows the status table, and a lock removes stop and restart', () => {
    expect(podActions('RUNNING', false)).toEqual(['stop', 'restart', 'terminate'])
    expect(podActions('EXITED', false)).toEqual(['start', 'terminate'])
    expect(podActions('ERROR', false)).toEqual(['start', 'terminate'])
    expect(podActions('PROVISIONING', false)).toEqual(['stop', 'terminate'])
    expect(podActions('STARTING', false)).toEqual(['stop', 'terminate'])
    expect(podActions('TERMINATED', false)).toEqual([])
    expect(podActions('RUNNING', true)).toEqual(['terminate'])
  })

  it('says why an action is refused', () => {
    expect(actionRefusal({ id: 'p', status: 'RUNNING', locked: true }, 'stop')).toBe(
      'pod p is locked: it cannot be stopped; PATCH {"locked": false} first',
    )
    expect(actionRefusal({ id: 'p', status: 'EXITED', locked: false }, 'stop')).toBe(
      'action "stop" is not valid for pod p while it is EXITED; valid now: start, terminate',
    )
    expect(actionRefusal({ id: 'p', status: 'RUNNING', locked: false }, 'stop')).toBeNull()
  })
})

describe('cost and view', () => {
  it('prices GPUs x count or vCPUs, and nothing once EXITED', () => {
    expect(
      podCost(
        { status: 'RUNNING', gpu: { id: 'g', count: 2, allowedCudaVersions: [], minCudaVersion: null }, cpu: null },
        { gpu: 0.43 },
      ),
    ).toBe(0.86)
    expect(
      podCost({ status: 'ERROR', gpu: null, cpu: { id: 'cpu3c', vcpuCount: 4, memory: 8 } }, { perVcpu: 0.03 }),
    ).toBe(0.12)
    expect(
      podCost(
        { status: 'EXITED', gpu: { id: 'g', count: 2, allowedCudaVersions: [], minCudaVersion: null }, cpu: null },
        { gpu: 0.43 },
      ),
    ).toBe(0)
  })

  it('has every key, runtime only while RUNNING, ssh direct only with 22/tcp mapped', () => {
    const running = record({
      ports: ['22/tcp', '8888/http'],
      portMappings: [{ privatePort: 22, publicPort: 40022, protocol: 'tcp', ip: '127.0.0.1' }],
    })
    const view = toPod(running, {
      prices: { gpu: 0.43 },
      now: Date.parse('2026-01-01T00:01:00.000Z'),
      live: { cpuPercent: 50, memoryBytes: 0 },
      hostMemoryBytes: 1,
    })
    expect(view.ssh).toEqual({
      proxy: null,
      direct: { host: '127.0.0.1', port: 40022, username: 'root', command: 'ssh root@127.0.0.1 -p 40022' },
    })
    expect(view.runtime).toMatchObject({
      uptime: 60,
      ports: [
        { private: 22, public: 40022, type: 'tcp', ip: '127.0.0.1' },
        { private: 8888, public: null, type: 'http', ip: null },
      ],
    })
    expect(view).toMatchObject({
      template: null,
      cost: 0.43,
      gpu: { id: 'NVIDIA L4', count: 1 },
      dataCenterId: 'LOCAL-1',
      cudaVersion: '12.4',
      globalNetworking: { enabled: false },
    })
    expect('cpu' in view).toBe(false)
    expect('cluster' in view).toBe(false)
    const exited = toPod(
      { ...running, status: 'EXITED' },
      { prices: { gpu: 0.43 }, now: 0, live: null, hostMemoryBytes: 1 },
    )
    expect(exited).toMatchObject({ runtime: null, cost: 0, ssh: { proxy: null, direct: null }, cudaVersion: '12.4' })
  })
})

describe('podPlacementRequest', () => {
  it('narrows to the volume data center, prefers the last host and requires it with a persistent disk', () => {
    const pod = record({ mounts: { persistent: { size: 20, path: '/w' } } })
    expect(podPlacementRequest(pod, { globalNetworkDataCenters: [], volumeDataCenter: null })).toMatchObject({
      dataCenterIds: [],
      preferHostId: 'local',
      onlyHostId: 'local',
      gpu: { typeIds: ['NVIDIA L4'], count: 1 },
    })
    expect(
      podPlacementRequest(record({ placement: null }), { globalNetworkDataCenters: [], volumeDataCenter: 'LOCAL-1' }),
    ).toEqual({
      dataCenterIds: ['LOCAL-1'],
      gpu: { typeIds: ['NVIDIA L4'], count: 1, allowedCudaVersions: [], minCudaVersion: null },
      // Counted against the pod's account's quotas where it is placed.
      owner: { accountId: 'acc', kind: 'pod' },
    })
    expect(
      podPlacementRequest(record({ dataCenterIds: ['GLOBAL-1'] }), {
        globalNetworkDataCenters: [],
        volumeDataCenter: 'LOCAL-1',
      }),
    ).toEqual({
      reason: 'the network volume is in data center LOCAL-1, which dataCenterIds does not include',
    })
  })
})
