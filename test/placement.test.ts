import { afterEach, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const RTX4090 = 'NVIDIA GeForce RTX 4090'
const L4 = 'NVIDIA L4'
const A5000 = 'NVIDIA RTX A5000'

/** Three hosts with one virtual GPU each: ADA_24 has a 4090 (CUDA 12.2) and an L4 (12.11), AMPERE_24 an A5000 (12.4). */
const fleet = {
  detectGpus: false,
  hosts: [
    {
      id: 'h1',
      dataCenterId: 'LOCAL-1',
      vcpus: 8,
      memoryGb: 32,
      gpus: [{ typeId: RTX4090, count: 1, cudaVersion: '12.2', virtual: true }],
    },
    {
      id: 'h2',
      dataCenterId: 'LOCAL-1',
      vcpus: 8,
      memoryGb: 32,
      gpus: [{ typeId: L4, count: 1, cudaVersion: '12.11', virtual: true }],
    },
    {
      id: 'h3',
      dataCenterId: 'LOCAL-1',
      vcpus: 8,
      memoryGb: 32,
      gpus: [{ typeId: A5000, count: 1, cudaVersion: '12.4', virtual: true }],
    },
  ],
}

describe('placement on the fleet', () => {
  let s: TestServer
  afterEach(() => s?.stop())
  const start = async () => (s = await startTestServer({ fleet, jobs: { pingIntervalMs: 500 } }))
  const gpuEndpoint = (name: string, gpu: Record<string, unknown>, max = 3) =>
    createEndpoint(
      s,
      endpointBody('hangar/sleep:latest', { name, cpu: undefined, gpu, workers: { min: 0, max, idleTimeout: 60 } }),
    ).then((e) => e.id as string)
  const run = (ep: string, ms: number) =>
    jobCall(s, 'POST', `/v2/${ep}/run`, { input: { ms } }).then((r) => r.body.id as string)
  const workers = async (ep: string) => (await s.api('GET', `/v2/serverless/${ep}/workers`)).body

  it('falls through a full pool to the next one, type by type in order', async () => {
    await start()
    const ep = await gpuEndpoint('fallthrough', { pools: ['ADA_24', 'AMPERE_24'] })
    const ids = await Promise.all([1, 2, 3, 4].map(() => run(ep, 1_500)))
    const list = await until(
      async () => {
        const l = await workers(ep)
        return l.summary.running + l.summary.idle === 3 ? l : undefined
      },
      15_000,
      'three placed workers',
    )
    const placed = list.workers.map((w: any) => `${w.gpuTypeId}@${w.hostId}`).sort()
    expect(placed).toEqual([`${A5000}@h3`, `${RTX4090}@h1`, `${L4}@h2`].sort())
    expect(list.workers.every((w: any) => w.gpuCount === 1 && w.dataCenterId === 'LOCAL-1')).toBe(true)
    for (const id of ids) expect((await waitFinal(s, ep, id)).status).toBe('COMPLETED')
  }, 40_000)

  it('never uses an excluded type, and says why the second worker waits', async () => {
    await start()
    const ep = await gpuEndpoint('excluded', { pools: ['ADA_24'], excludedTypes: [RTX4090] }, 2)
    const first = await run(ep, 3_000)
    await until(
      async () => (await jobCall(s, 'GET', `/v2/${ep}/status/${first}`)).body.status === 'IN_PROGRESS',
      15_000,
      'first job running',
    )
    const second = await run(ep, 10)
    const list = await until(
      async () => {
        const l = await workers(ep)
        return l.summary.throttled === 1 ? l : undefined
      },
      10_000,
      'a throttled worker',
    )
    expect(list.workers.find((w: any) => w.status === 'RUNNING')).toMatchObject({ gpuTypeId: L4, hostId: 'h2' })
    expect(list.workers.find((w: any) => w.status === 'THROTTLED')).toMatchObject({
      gpuTypeId: null,
      hostId: null,
      lastError: `all GPUs of the selected GPU types (${L4}) are in use`,
    })
    expect(list.waiting.reason).toEqual({
      code: 'NO_CAPACITY',
      message: `no capacity for 1 wanted worker(s): all GPUs of the selected GPU types (${L4}) are in use`,
    })
    const status = (await jobCall(s, 'GET', `/v2/${ep}/status/${second}`)).body
    expect(status).toMatchObject({ status: 'IN_QUEUE', waitingReason: expect.stringMatching(/^no capacity/) })
    expect((await jobCall(s, 'GET', `/v2/${ep}/health`)).body.workers).toMatchObject({
      throttled: 1,
      running: 1,
      unhealthy: 0,
    })
    // The 4090 stays free the whole time.
    expect(s.hangar.catalog.fleet.gpuStock(RTX4090).free).toBe(1)
    expect((await waitFinal(s, ep, second)).status).toBe('COMPLETED')
    const used = (await s.hangar.store.workers.listRecent(ep, 10)).map((w) => w.gpuTypeId)
    expect(used.length).toBeGreaterThan(0)
    expect(used.every((t) => t === L4)).toBe(true)
  }, 40_000)

  it('compares CUDA versions numerically: minCudaVersion 12.4 rejects the 12.2 host and accepts 12.11', async () => {
    await start()
    const ep = await gpuEndpoint('cuda-min', { pools: ['ADA_24'], minCudaVersion: '12.4' }, 1)
    const done = await waitFinal(s, ep, await run(ep, 10))
    expect(done.status).toBe('COMPLETED')
    expect(await s.hangar.store.workers.get(done.workerId)).toMatchObject({ gpuTypeId: L4 })
    expect((await workers(ep)).workers[0]).toMatchObject({ hostId: 'h2', cudaVersion: '12.11' })
  }, 30_000)

  it('keeps a job waiting, with the reason, when CUDA constraints reject every host', async () => {
    await start()
    const ep = await gpuEndpoint('cuda-none', { pools: ['ADA_24'], allowedCudaVersions: ['12.8'] }, 1)
    const id = await run(ep, 10)
    const expected = `no host with the selected GPU types (${RTX4090}, ${L4}) has CUDA 12.8 (they have 12.2, 12.11)`
    const list = await until(
      async () => {
        const l = await workers(ep)
        return l.summary.throttled === 1 ? l : undefined
      },
      10_000,
      'a throttled worker',
    )
    expect(list.workers[0].lastError).toBe(expected)
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${id}`)).body).toMatchObject({
      status: 'IN_QUEUE',
      waitingReason: `no capacity for 1 wanted worker(s): ${expected}`,
    })
    expect((await s.hangar.store.workers.listRecent(ep, 10)).length).toBe(0)
    await jobCall(s, 'POST', `/v2/${ep}/cancel/${id}`)
    await until(async () => (await workers(ep)).summary.total === 0, 10_000, 'throttled worker dropped')
  }, 30_000)

  it('evicts parked FLASHBOOT workers before PRIORITY_FLASHBOOT ones when capacity is needed', async () => {
    // One CPU host with room for two 2-vCPU workers.
    s = await startTestServer({
      fleet: { detectGpus: false, hosts: [{ id: 'small', dataCenterId: 'LOCAL-1', vcpus: 4, memoryGb: 16 }] },
      jobs: { pingIntervalMs: 500 },
    })
    const cpuEp = (name: string, flashboot: string) =>
      createEndpoint(
        s,
        endpointBody('hangar/echo:latest', { name, flashboot, workers: { min: 0, max: 1, idleTimeout: 1 } }),
      ).then((e) => e.id as string)
    const plain = await cpuEp('parked-plain', 'FLASHBOOT')
    const priority = await cpuEp('parked-priority', 'PRIORITY_FLASHBOOT')
    const a = (await jobCall(s, 'POST', `/v2/${plain}/runsync`, { input: {} })).body
    const b = (await jobCall(s, 'POST', `/v2/${priority}/runsync`, { input: {} })).body
    expect([a.status, b.status]).toEqual(['COMPLETED', 'COMPLETED'])
    await until(
      async () => (await workers(plain)).parked.length === 1 && (await workers(priority)).parked.length === 1,
      10_000,
      'both workers parked',
    )
    expect(s.hangar.catalog.fleet.cpuStock(2, 2).freeVcpu).toBe(0)

    const third = await cpuEp('needs-room', 'OFF')
    const c = (await jobCall(s, 'POST', `/v2/${third}/runsync`, { input: {} })).body
    expect(c.status).toBe('COMPLETED')
    expect((await workers(plain)).parked).toEqual([])
    expect((await workers(priority)).parked).toMatchObject([{ id: b.workerId }])
  }, 40_000)
})
