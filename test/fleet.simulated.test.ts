import { afterEach, describe, expect, it } from 'vitest'
import { SimulatedRuntime } from '../bench/fleet/SimulatedRuntime.js'
import { VirtualWorkers } from '../bench/fleet/VirtualWorkers.js'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

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
    const ep = await createEndpoint(s, endpointBody('sim/any:latest', { workers: { min: 0, max: 3, idleTimeout: 60 } }))
    const ids: string[] = []
    for (let i = 0; i < 30; i++) ids.push((await jobCall(s, 'POST', `/v2/${ep.id}/run`, { input: { i } })).body.id)
    for (const id of ids) expect((await waitFinal(s, ep.id, id)).status).toBe('COMPLETED')
    expect(workers.duplicates()).toEqual({ taken: 30, twice: [] })
    expect(workers.stats.firstError).toBeNull()
    expect(runtime.starts.begun).toBeGreaterThan(0)
  })
})
