import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPod, podBody, portUrl, terminateAll, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

/** Every create/PATCH/action rule answered through the API, with status and `errors`, and tenancy. */
describe('pods API', () => {
  let s: TestServer
  let alice: string
  let bob: string
  let readOnly: string
  let volumeId: string
  beforeAll(async () => {
    s = await startTestServer({
      catalog: {
        dataCenters: [
          {
            id: 'GN-1',
            name: 'Global',
            region: 'EUROPE',
            globalNetwork: true,
            networkVolumeTypes: ['STANDARD'],
            compliance: [],
          },
        ],
      },
    })
    alice = await s.accountKey('pod-alice')
    bob = await s.accountKey('pod-bob')
    readOnly = await s.accountKey('pod-alice', 'READ_ONLY')
    volumeId = (await s.api('POST', '/v2/network-volumes', { name: 'data', size: 10, dataCenter: 'LOCAL-1' }, alice))
      .body.id
  })
  afterAll(async () => {
    await terminateAll(s, alice)
    await terminateAll(s, bob)
    await s.stop()
  })

  const post = (body: unknown, key = alice) => s.api('POST', '/v2/pods', body, key)

  it('answers a created pod with every key of the response', async () => {
    const r = await post(podBody({ name: 'keys' }))
    expect(r.status).toBe(201)
    expect(Object.keys(r.body).sort()).toEqual(
      [
        'actions',
        'args',
        'cloud',
        'cmd',
        'cost',
        'cpu',
        'createdAt',
        'cudaVersion',
        'dataCenterId',
        'disk',
        'entrypoint',
        'env',
        'globalNetworking',
        'id',
        'image',
        'locked',
        'mounts',
        'name',
        'ports',
        'registry',
        'runtime',
        'ssh',
        'startedAt',
        'status',
        'template',
      ].sort(),
    )
    expect(r.body).toMatchObject({
      cloud: 'SECURE',
      cpu: { id: 'cpu3c', vcpuCount: 2, memory: 4 },
      disk: 20,
      mounts: {},
      locked: false,
      globalNetworking: { enabled: false },
      template: null,
      startedAt: null,
    })
    expect((await s.api('GET', '/v2/pods', undefined, alice)).body.pods.map((p: { id: string }) => p.id)).toContain(
      r.body.id,
    )
  })

  const invalid: Array<[string, unknown, number, string[]]> = [
    ['an unknown key', { ...podBody(), bogus: 1 }, 422, ["$: additional properties 'bogus' not allowed"]],
    [
      'an unknown key in gpu',
      { ...podBody({ cpu: undefined }), gpu: { id: 'NVIDIA L4', pools: ['ADA_24'] } },
      422,
      ["gpu: additional properties 'pools' not allowed"],
    ],
    [
      'a partial persistent mount',
      podBody({ gpu: { id: 'NVIDIA L4' }, cpu: undefined, mounts: { persistent: { size: 10 } } }),
      422,
      ['mounts.persistent.path: is required'],
    ],
    [
      'a partial network mount',
      podBody({ mounts: { network: [{ path: '/v' }] } }),
      422,
      ['mounts.network[0].volumeId: is required'],
    ],
    [
      'two network mounts',
      podBody({
        mounts: {
          network: [
            { volumeId: 'a', path: '/a' },
            { volumeId: 'b', path: '/b' },
          ],
        },
      }),
      422,
      ['mounts.network: must NOT have more than 1 items'],
    ],
    [
      'CUDA constraints with cpu',
      podBody({ gpu: { minCudaVersion: '12.4' } }),
      422,
      ['gpu.minCudaVersion: CUDA constraints apply only to GPU pods, and this create sets cpu'],
    ],
    [
      'a NUL byte in an env name and value',
      podBody({ env: { 'N\u0000UL': 'y', A: 'b\u0000' } }),
      422,
      [
        'env: key "N\\u0000UL" must not contain a NUL character (\\u0000), which no program can be given',
        'env.A: must not contain a NUL character (\\u0000), which no program can be given, got "b\\u0000"',
      ],
    ],
    [
      'no image',
      { name: 'x', cpu: { id: 'cpu3c', vcpuCount: 2 } },
      422,
      ['image: is required unless templateId is set'],
    ],
    [
      'a serverless template',
      { name: 'x', templateId: 'hangar-echo', cpu: { id: 'cpu3c', vcpuCount: 2 } },
      422,
      ['templateId: template "hangar-echo" is a serverless template, not a pod template'],
    ],
    [
      'neither gpu nor cpu',
      { name: 'x', image: 'i' },
      400,
      ['$: exactly one of gpu or cpu must be set; neither was sent'],
    ],
    [
      'both gpu and cpu',
      podBody({ gpu: { id: 'NVIDIA L4' } }),
      400,
      ['$: exactly one of gpu or cpu must be set; both were sent'],
    ],
    [
      'both mount kinds',
      podBody({
        gpu: { id: 'NVIDIA L4' },
        cpu: undefined,
        mounts: { persistent: { size: 10, path: '/w' }, network: [{ volumeId: 'v', path: '/v' }] },
      }),
      400,
      [
        'mounts: set either persistent or network, not both',
        'mounts.network[0].volumeId: "v" is not one of your network volumes; see /v2/network-volumes',
      ],
    ],
    [
      'an empty network array',
      podBody({ mounts: { network: [] } }),
      400,
      ['mounts.network: must not be an empty array; omit it for no network volume'],
    ],
    [
      'a persistent mount with cpu',
      podBody({ mounts: { persistent: { size: 10, path: '/w' } } }),
      400,
      ['mounts.persistent: CPU pods support only the container disk and network volumes'],
    ],
    [
      'global networking on a CPU pod',
      podBody({ globalNetworking: true }),
      400,
      ['globalNetworking: needs an NVIDIA GPU pod; this is a CPU pod'],
    ],
    [
      'CUDA versions that no host has',
      podBody({ cpu: undefined, gpu: { id: 'NVIDIA L4', allowedCudaVersions: ['12.10'] } }),
      400,
      [
        'gpu: no capacity for 1 x NVIDIA L4: no host with the selected GPU types (NVIDIA L4) has CUDA 12.10 (they have 12.2); 1 of 1 NVIDIA L4 GPUs are free',
      ],
    ],
    [
      'a COMMUNITY pod',
      podBody({ cloud: 'COMMUNITY' }),
      400,
      [
        expect.stringMatching(
          /^cpu: no capacity for cpu3c with 2 vCPUs and 4 GB: this fleet has no COMMUNITY cloud hosts/,
        ) as unknown as string,
      ],
    ],
  ]
  for (const [name, body, status, errors] of invalid) {
    it(`refuses ${name} (${status})`, async () => {
      const r = await post(body)
      expect(r.status, JSON.stringify(r.body)).toBe(status)
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/)
      expect(r.body.errors).toEqual(errors)
    })
  }

  it('compares minCudaVersion numerically: 12.11 is above 12.2', async () => {
    const r = await post(podBody({ cpu: undefined, gpu: { id: 'NVIDIA L4', minCudaVersion: '12.11' } }))
    expect(r.status).toBe(400)
    expect(r.body.errors[0]).toContain('has CUDA 12.11 or newer (they have 12.2)')
  })

  it('answers unknown and foreign private templates with 404, accepts public ones', async () => {
    expect((await post({ name: 'x', templateId: 'tpl_nope', cpu: { id: 'cpu3c', vcpuCount: 2 } })).status).toBe(404)
    const priv = await s.api('POST', '/v2/templates', { name: 'bobs', image: 'hangar/pod:latest' }, bob)
    expect((await post({ name: 'x', templateId: priv.body.id, cpu: { id: 'cpu3c', vcpuCount: 2 } })).status).toBe(404)
    const pub = await s.api(
      'POST',
      '/v2/templates',
      { name: 'bobs-public', image: 'hangar/pod:latest', public: true, ports: ['8080/http'] },
      bob,
    )
    const r = await post({ name: 'x', templateId: pub.body.id, cpu: { id: 'cpu3c', vcpuCount: 2 } })
    expect(r.status).toBe(201)
    expect(r.body).toMatchObject({ image: 'hangar/pod:latest', ports: ['8080/http'], template: null })
  })

  it('mounts a network volume at its path and only detaches it on terminate', async () => {
    const created = await createPod(s, podBody({ mounts: { network: [{ volumeId, path: '/data' }] } }), alice)
    const pod = await waitPod(s, created.id, 'RUNNING', alice)
    expect(pod.mounts).toEqual({ network: [{ volumeId, path: '/data' }] })
    await until(
      () =>
        fetch(`${portUrl(pod, 8080)}/files/shared.txt`, { method: 'PUT', body: 'on the volume' })
          .then((r) => r.status === 201)
          .catch(() => false),
      10_000,
      'write',
    )
    const file = join(s.dataDir, 'volumes', 'LOCAL-1', volumeId, 'shared.txt')
    expect(readFileSync(file, 'utf8')).toBe('on the volume')
    expect((await s.api('DELETE', `/v2/pods/${pod.id}`, undefined, alice)).status).toBe(204)
    expect(existsSync(file)).toBe(true)
  })

  it('applies the PATCH mount rules', async () => {
    const withVolume = await createPod(s, podBody({ mounts: { network: [{ volumeId, path: '/data' }] } }), alice)
    const patch = (body: unknown) => s.api('PATCH', `/v2/pods/${withVolume.id}`, body, alice)
    expect((await patch({ mounts: {} })).body.mounts).toEqual({ network: [{ volumeId, path: '/data' }] })
    expect((await patch({ mounts: { network: [] } })).status).toBe(400)
    expect((await patch({ mounts: { network: [{ volumeId: 'vol_other', path: '/data' }] } })).body.errors).toEqual([
      `mounts.network[0].volumeId: cannot change from "${volumeId}" to "vol_other"; only the path can change`,
    ])
    expect((await patch({ mounts: { persistent: { size: 10, path: '/w' } } })).body.errors).toEqual([
      'mounts.persistent: this pod was created without a persistent mount; a mount kind cannot be added later',
    ])
    expect((await patch({ mounts: { network: [{ volumeId }] } })).status).toBe(422)
    expect((await patch({ env: { A: 'b\u0000' } })).body.errors).toEqual([
      'env.A: must not contain a NUL character (\\u0000), which no program can be given, got "b\\u0000"',
    ])
    expect((await patch({ startSsh: true })).status).toBe(422)
    expect((await patch({ cpu: { id: 'cpu3c', vcpuCount: 4 } })).status).toBe(422)
    const moved = await patch({ mounts: { network: [{ volumeId, path: '/mnt/data' }] }, name: 'moved' })
    expect(moved.status).toBe(200)
    expect(moved.body).toMatchObject({ name: 'moved', mounts: { network: [{ volumeId, path: '/mnt/data' }] } })
    await s.api('DELETE', `/v2/pods/${withVolume.id}`, undefined, alice)
  })

  it('refuses bad action bodies (422) and actions not valid now (409)', async () => {
    const created = await createPod(s, podBody(), alice)
    expect((await s.api('POST', `/v2/pods/${created.id}/action`, { action: 'reset' }, alice)).status).toBe(422)
    expect((await s.api('POST', `/v2/pods/${created.id}/action`, { action: 'stop', force: true }, alice)).status).toBe(
      422,
    )
    await waitPod(s, created.id, 'RUNNING', alice)
    const start = await s.api('POST', `/v2/pods/${created.id}/action`, { action: 'start' }, alice)
    expect(start.status).toBe(409)
    expect(start.body.detail).toBe(
      `action "start" is not valid for pod ${created.id} while it is RUNNING; valid now: stop, restart, terminate`,
    )
    expect((await s.api('DELETE', `/v2/pods/${created.id}`, undefined, alice)).status).toBe(204)
    expect((await s.api('DELETE', `/v2/pods/${created.id}`, undefined, alice)).status).toBe(404)
  })

  it('keeps pods to their account: 401 without a key, 404 for another account, 403 for READ_ONLY writes', async () => {
    const created = await createPod(s, podBody(), alice)
    const id = created.id
    expect((await s.api('GET', '/v2/pods', undefined, null)).status).toBe(401)
    expect((await s.api('POST', '/v2/pods', podBody(), null)).status).toBe(401)
    for (const [method, path, body] of [
      ['GET', `/v2/pods/${id}`, undefined],
      ['PATCH', `/v2/pods/${id}`, { name: 'x' }],
      ['DELETE', `/v2/pods/${id}`, undefined],
      ['POST', `/v2/pods/${id}/action`, { action: 'stop' }],
      ['GET', `/v2/pods/${id}/logs?tail=0`, undefined],
      ['GET', `/proxy/${id}/8080/`, undefined],
    ] as const) {
      const r = await s.api(method, path, body, bob)
      expect(r.status, `${method} ${path}`).toBe(404)
    }
    expect((await s.api('GET', '/v2/pods', undefined, bob)).body.pods.map((p: { id: string }) => p.id)).not.toContain(
      id,
    )
    expect((await s.api('GET', `/v2/pods/${id}`, undefined, readOnly)).status).toBe(200)
    expect((await s.api('GET', '/v2/pods', undefined, readOnly)).status).toBe(200)
    for (const [method, path, body] of [
      ['POST', '/v2/pods', podBody()],
      ['PATCH', `/v2/pods/${id}`, { name: 'x' }],
      ['DELETE', `/v2/pods/${id}`, undefined],
      ['POST', `/v2/pods/${id}/action`, { action: 'stop' }],
    ] as const) {
      expect((await s.api(method, path, body, readOnly)).status, `${method} ${path}`).toBe(403)
    }
    const ep = await s.api(
      'POST',
      '/v2/serverless',
      {
        name: 'e',
        type: 'QUEUE',
        templateId: 'hangar-echo',
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
      },
      alice,
    )
    const restricted = await s.accountKey('pod-alice', 'RESTRICTED', [ep.body.id])
    expect((await s.api('GET', '/v2/pods', undefined, restricted)).status).toBe(403)
    expect((await s.api('GET', `/v2/pods/${id}`, undefined, restricted)).status).toBe(403)
    await s.api('DELETE', `/v2/pods/${id}`, undefined, alice)
  })

  it('accepts includeClusterPods and refuses a malformed value', async () => {
    expect((await s.api('GET', '/v2/pods?includeClusterPods=true', undefined, alice)).status).toBe(200)
    expect((await s.api('GET', '/v2/pods?includeClusterPods=maybe', undefined, alice)).status).toBe(422)
  })

  it('offers global networking where the data center has it', async () => {
    const r = await post(
      podBody({ cpu: undefined, gpu: { id: 'NVIDIA L4' }, globalNetworking: true, dataCenterIds: ['LOCAL-1'] }),
    )
    expect(r.status).toBe(400)
    expect(r.body.errors).toEqual([
      'globalNetworking: no data center in dataCenterIds supports global networking (globalNetwork in /v2/catalog/datacenters)',
    ])
    // GN-1 has global networking but no host: accepted by the rules, refused for capacity.
    const none = await post(podBody({ cpu: undefined, gpu: { id: 'NVIDIA L4' }, globalNetworking: true }))
    expect(none.status).toBe(400)
    expect(none.body.errors[0]).toMatch(/^gpu: no capacity for 1 x NVIDIA L4: no host in data centers GN-1/)
  })
})
