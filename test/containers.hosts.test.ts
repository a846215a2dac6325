import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LABELS } from '../src/runtime/labels.js'
import { containerEnv, containerSkipReason } from './helpers/containers.js'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const skip =
  containerSkipReason() ??
  (containerEnv.podmanRootB
    ? null
    : 'HANGAR_TEST_PODMAN_ROOT_B is not set (run `source .ci/setup-podman.sh`): two-engine test skipped')
if (skip) console.warn(skip)

/** Engine B: a second Podman API service of its own storage, which this test kills and starts again. */
function startEngineB(socket: string): Promise<ChildProcess> {
  const root = containerEnv.podmanRootB!
  const proc = spawn(
    'podman',
    [
      '--root',
      join(root, 'storage'),
      '--runroot',
      join(root, 'run'),
      'system',
      'service',
      '--time=0',
      `unix://${socket}`,
    ],
    { stdio: 'ignore' },
  )
  return until(
    async () =>
      existsSync(socket) &&
      (await new Docker({ socketPath: socket }).ping().then(
        () => true,
        () => false,
      )),
    20_000,
    'engine B answering',
  ).then(() => proc)
}

describe.skipIf(skip !== null)('two container engines as two hosts', () => {
  let s: TestServer
  let engineB: ChildProcess
  const dir = mkdtempSync(join(tmpdir(), 'hangar-hosts-'))
  const socketB = join(dir, 'b.sock')
  const a = () => new Docker({ socketPath: new URL(containerEnv.dockerHost!).pathname })
  const b = () => new Docker({ socketPath: socketB })
  const workers = async (ep: string) => (await s.api('GET', `/v2/serverless/${ep}/workers`)).body
  const engine = (address: string) => ({
    address,
    network: 'host',
    gpus: 'none',
    cgroupParent: containerEnv.cgroupParent,
  })
  const ofEndpoint = (docker: Docker, ep: string) =>
    docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABELS.endpoint}=${ep}`] }) })

  beforeAll(async () => {
    engineB = await startEngineB(socketB)
    // Each host fits one 2-vCPU worker, so two workers must use both.
    const host = (id: string, address: string) => ({
      id,
      dataCenterId: 'LOCAL-1',
      vcpus: 2,
      memoryGb: 4,
      engine: engine(address),
    })
    s = await startTestServer({
      fleet: { detectGpus: false, hosts: [host('a', containerEnv.dockerHost!), host('b', `unix://${socketB}`)] },
      enginePingIntervalMs: 200,
      jobs: { pingIntervalMs: 500, crashBackoffMs: 200 },
    })
  }, 60_000)
  afterAll(async () => {
    await s?.stop()
    engineB?.kill('SIGKILL')
    // Containers engine B started outlive its service: remove them through a fresh one.
    const again = await startEngineB(socketB).catch(() => null)
    if (again) {
      for (const c of await b().listContainers({ all: true }))
        await b()
          .getContainer(c.Id)
          .remove({ force: true })
          .catch(() => undefined)
      again.kill('SIGKILL')
    }
    rmSync(dir, { recursive: true, force: true })
  }, 60_000)

  it('places workers across both hosts; when one engine dies its worker is lost, its job requeued, nothing placed there until it answers again', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody(containerEnv.workerImage, { name: 'two-hosts', workers: { min: 2, max: 2, idleTimeout: 60 } }),
      )
    ).id
    const both = await until(
      async () => {
        const l = await workers(ep)
        return l.workers.filter((w: { status: string }) => w.status === 'IDLE').length === 2 ? l : undefined
      },
      60_000,
      'two idle workers',
    )
    expect(both.workers.map((w: { hostId: string }) => w.hostId).sort()).toEqual(['a', 'b'])
    expect(both.workers.every((w: { runtime: string }) => w.runtime === 'docker')).toBe(true)
    expect(await ofEndpoint(a(), ep)).toHaveLength(1)
    expect(await ofEndpoint(b(), ep)).toHaveLength(1)
    const onB = both.workers.find((w: { hostId: string }) => w.hostId === 'b').id

    // Two long jobs, one per worker; then engine B dies.
    const jobs = await Promise.all(
      [1, 2].map(
        async (n) => (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { n, ms: 3_000 } })).body.id as string,
      ),
    )
    await until(
      async () => (await workers(ep)).workers.filter((w: { status: string }) => w.status === 'RUNNING').length === 2,
      20_000,
      'both workers running a job',
    )
    engineB.kill('SIGKILL')
    await until(
      async () =>
        !(await workers(ep)).workers.some(
          (w: { id: string; status: string }) => w.id === onB && w.status !== 'UNHEALTHY',
        ),
      20_000,
      'the worker on b given up',
    )
    // Its replacement finds no room: host a is full, host b is down.
    const throttled = await until(
      async () => (await workers(ep)).workers.find((w: { status: string }) => w.status === 'THROTTLED'),
      20_000,
      'a throttled replacement',
    )
    expect(throttled.lastError).toMatch(/vCPU|down/)
    // Both jobs complete: the one lost with b runs again on a.
    for (const id of jobs) expect((await waitFinal(s, ep, id, 30_000)).status).toBe('COMPLETED')
    const onA = both.workers.find((w: { hostId: string }) => w.hostId === 'a').id
    const final = await Promise.all(jobs.map(async (id) => (await jobCall(s, 'GET', `/v2/${ep}/status/${id}`)).body))
    expect(final.map((j: { workerId?: string }) => j.workerId)).toEqual([onA, onA])

    // Engine B answers again: the container left there is removed and b gets a worker again.
    engineB = await startEngineB(socketB)
    await until(
      async () => {
        const l = await workers(ep)
        const idle = l.workers.filter((w: { status: string }) => w.status === 'IDLE' || w.status === 'RUNNING')
        return idle.length === 2 && idle.some((w: { hostId: string }) => w.hostId === 'b')
      },
      60_000,
      'a worker on b again',
    )
    const onBNow = await ofEndpoint(b(), ep)
    expect(onBNow).toHaveLength(1)
    expect(onBNow[0].Labels[LABELS.id]).not.toBe(onB)
  }, 180_000)
})
