import { afterEach, describe, expect, it } from 'vitest'
import { SimulatedRuntime } from '../bench/fleet/SimulatedRuntime.js'
import { LABELS } from '../src/runtime/labels.js'
import { VirtualWorkers } from '../bench/fleet/VirtualWorkers.js'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

/** Four virtual hosts of 8 vCPUs: room for 16 two-vCPU workers. */
const fleet = {
  detectGpus: false,
  hosts: [1, 2, 3, 4].map((i) => ({ id: `sim-${i}`, dataCenterId: 'LOCAL-1', vcpus: 8, memoryGb: 32 })),
}

describe('the simulated fleet (bench/fleet)', () => {
  let s: TestServer | undefined
  let workers: VirtualWorkers | undefined
  afterEach(async () => {
    await s?.stop()
    await workers?.close()
    s = undefined
    workers = undefined
  })

  it('runs every job once on virtual workers speaking the Python SDK protocol', async () => {
    workers = new VirtualWorkers({ jobMs: 50, streamChunks: 1, progress: true })
    const runtime = new SimulatedRuntime({ fleet: workers })
    s = await startTestServer({ fleet, jobs: { pingIntervalMs: 1000 } }, { runtime: () => runtime })
    const ep = await createEndpoint(s, endpointBody('sim/any:latest', { workers: { min: 0, max: 4, idleTimeout: 60 } }))
    const ids: string[] = []
    for (let i = 0; i < 12; i++) ids.push((await jobCall(s, 'POST', `/v2/${ep.id}/run`, { input: { i } })).body.id)
    for (const id of ids) expect((await waitFinal(s, ep.id, id)).status).toBe('COMPLETED')
    expect(workers.duplicates()).toEqual({ taken: 12, twice: [], rerun: 0 })
    // Each job posted its progress and its stream chunk before its result.
    expect(workers.stats.streams).toBe(12)
    expect(workers.stats.firstError).toBeNull()
    expect(runtime.starts.begun).toBeGreaterThan(0)
  })

  it("stops the control plane only after a deleted endpoint's worker, slow to remove, gave its job back", async () => {
    let removed = false
    const rejections: unknown[] = []
    const onRejection = (err: unknown) => rejections.push(err)
    process.on('unhandledRejection', onRejection)
    try {
      workers = new VirtualWorkers({ jobMs: 600_000 })
      const runtime = new SimulatedRuntime({
        fleet: workers,
        // An engine slow to remove a container (Podman in CI took seconds).
        beforeRemove: async () => {
          await new Promise((r) => setTimeout(r, 1_500))
          removed = true
        },
      })
      s = await startTestServer({ fleet, jobs: { pingIntervalMs: 1000 } }, { runtime: () => runtime })
      const ep = await createEndpoint(
        s,
        endpointBody('sim/any:latest', { workers: { min: 0, max: 1, idleTimeout: 60 } }),
      )
      const job = (await jobCall(s, 'POST', `/v2/${ep.id}/run`, { input: {} })).body.id as string
      await until(async () => (await jobCall(s!, 'GET', `/v2/${ep.id}/status/${job}`)).body.status === 'IN_PROGRESS')
      expect((await s.api('DELETE', `/v2/serverless/${ep.id}`)).status).toBe(204)
      // The scaler stops the deleted endpoint's worker; the server is stopped as soon as it has ended,
      // while its runtime is still removing it.
      await s.hangar.scaler.poke()
      await until(async () => workers!.size === 0)
      const server = s
      s = undefined
      await server.stop()
      const removedBeforeStopped = removed
      // An end left running would query the closed store once the remove returns.
      await new Promise((r) => setTimeout(r, 2_000))
      expect(rejections.map(String)).toEqual([])
      // The worker's end (its job given back) came before the store closed, not after.
      expect(removedBeforeStopped).toBe(true)
    } finally {
      process.off('unhandledRejection', onRejection)
    }
  })

  it("gives another endpoint its workers and runs its jobs while one endpoint's start never finishes", async () => {
    workers = new VirtualWorkers({ jobMs: 50 })
    let stuckEndpoint = ''
    const runtime = new SimulatedRuntime({
      fleet: workers,
      // Endpoint A's workers never start (a Pod bound to a node that never runs it, an image pull of hours)
      // until the start is called off.
      beforeStart: (spec, signal) =>
        spec.labels[LABELS.endpoint] !== stuckEndpoint
          ? Promise.resolve()
          : new Promise((_, reject) => signal?.addEventListener('abort', () => reject(new Error('called off')))),
    })
    s = await startTestServer({ fleet, jobs: { pingIntervalMs: 1000 } }, { runtime: () => runtime })
    const a = await createEndpoint(
      s,
      endpointBody('sim/a:latest', { name: 'stuck', workers: { min: 0, max: 2, idleTimeout: 60 } }),
    )
    stuckEndpoint = a.id
    await jobCall(s, 'POST', `/v2/${a.id}/run`, { input: {} })
    await until(async () => runtime.starts.pending > 0, 20_000, 'a start of endpoint A in the runtime')
    const b = await createEndpoint(
      s,
      endpointBody('sim/b:latest', { name: 'free', workers: { min: 0, max: 2, idleTimeout: 60 } }),
    )
    const job = (await jobCall(s, 'POST', `/v2/${b.id}/run`, { input: {} })).body.id as string
    expect((await waitFinal(s, b.id, job, 20_000)).status).toBe('COMPLETED')
    // A's start is still in the runtime's hands, and its worker is still shown starting.
    expect(runtime.starts.pending).toBeGreaterThan(0)
  })
  it("keeps running when the runtime fails a worker's stop, and ends the worker by trying again", async () => {
    const rejections: unknown[] = []
    const onRejection = (err: unknown) => rejections.push(err)
    process.on('unhandledRejection', onRejection)
    try {
      workers = new VirtualWorkers({ jobMs: 50 })
      let failures = 0
      const runtime = new SimulatedRuntime({
        fleet: workers,
        // The first stop fails as a Pod DELETE did when the API server reset the connection (seen at 2,000 Pods).
        beforeStop: async () => {
          if (failures++ === 0) throw new Error('read ECONNRESET')
        },
      })
      s = await startTestServer({ fleet, jobs: { pingIntervalMs: 1000 } }, { runtime: () => runtime })
      const ep = await createEndpoint(
        s,
        endpointBody('sim/any:latest', { workers: { min: 0, max: 1, idleTimeout: 1 } }),
      )
      const job = (await jobCall(s, 'POST', `/v2/${ep.id}/run`, { input: {} })).body.id as string
      expect((await waitFinal(s, ep.id, job)).status).toBe('COMPLETED')
      // Idle for 1 s, the worker is stopped; that stop fails, the next one (a second later) ends it.
      await until(async () => runtime.size === 0, 20_000, 'the worker ended after its failed stop')
      expect(failures).toBeGreaterThanOrEqual(2)
      expect(rejections.map(String)).toEqual([])
      // The control plane still serves: another job gets a new worker and completes.
      const next = (await jobCall(s, 'POST', `/v2/${ep.id}/run`, { input: {} })).body.id as string
      expect((await waitFinal(s, ep.id, next)).status).toBe('COMPLETED')
    } finally {
      process.off('unhandledRejection', onRejection)
    }
  })
})
