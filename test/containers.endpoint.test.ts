import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LABELS } from '../src/runtime/labels.js'
import { containerEnv, containerSkipReason } from './helpers/containers.js'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { startFakeRegistry } from './helpers/fakeRegistry.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const skip = containerSkipReason()
if (skip) console.warn(skip)

describe.skipIf(skip !== null)('endpoints whose image is a real container (Podman)', () => {
  let s: TestServer
  let docker: Docker
  const workers = async (ep: string) => (await s.api('GET', `/v2/serverless/${ep}/workers`)).body
  const containersOf = async (ep: string) =>
    docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABELS.endpoint}=${ep}`] }) })

  beforeAll(async () => {
    docker = new Docker({ socketPath: new URL(containerEnv.dockerHost!).pathname })
    // One config line points this machine at its engine; the rest are what this test machine needs.
    s = await startTestServer({
      engine: {
        address: containerEnv.dockerHost,
        network: 'host',
        gpus: 'none',
        cgroupParent: containerEnv.cgroupParent,
      },
    })
  })
  afterAll(async () => {
    await s?.stop()
  })

  it('runs jobs with the TypeScript worker SDK inside the container, and shows runtime, host and cold start', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody(containerEnv.workerImage, {
          name: 'in-a-container',
          workers: { min: 0, max: 1, idleTimeout: 60 },
        }),
      )
    ).id
    const first = (await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: { hello: 'container' } })).body
    expect(first).toMatchObject({ status: 'COMPLETED', output: { echo: { hello: 'container' }, disk: '/workspace' } })
    const second = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { n: 2, ms: 50 } })).body
    expect((await waitFinal(s, ep, second.id)).output).toMatchObject({ echo: { n: 2, ms: 50 } })

    const list = await workers(ep)
    expect(list.workers).toHaveLength(1)
    expect(list.workers[0]).toMatchObject({
      id: first.workerId,
      runtime: 'docker',
      hostId: 'local',
      startPhase: null,
      coldStart: { pullMs: expect.any(Number), createMs: expect.any(Number), bootMs: expect.any(Number) },
    })
    const containers = await containersOf(ep)
    expect(containers).toHaveLength(1)
    expect(containers[0]).toMatchObject({ State: 'running', Image: containerEnv.workerImage })
    expect(containers[0].Labels).toMatchObject({
      [LABELS.kind]: 'worker',
      [LABELS.id]: first.workerId,
      [LABELS.release]: '1',
      [LABELS.installation]: expect.any(String),
    })

    // Deleting the endpoint stops and removes its container.
    expect((await s.api('DELETE', `/v2/serverless/${ep}`)).status).toBeLessThan(300)
    await until(async () => (await containersOf(ep)).length === 0, 30_000, 'the container removed')
  }, 90_000)

  it('FlashBoot keeps a parked worker’s container and reuses it', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody(containerEnv.workerImage, {
          name: 'flash',
          flashboot: 'FLASHBOOT',
          workers: { min: 0, max: 1, idleTimeout: 1 },
        }),
      )
    ).id
    const cold = (await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: { n: 1 } })).body
    expect(cold.status).toBe('COMPLETED')
    await until(async () => (await workers(ep)).parked.length === 1, 20_000, 'a parked worker')
    const [parked] = await containersOf(ep)
    expect(parked.State).toBe('running')
    const warm = (await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: { n: 2 } })).body
    expect(warm).toMatchObject({ status: 'COMPLETED', workerId: cold.workerId })
    expect((await containersOf(ep)).map((c) => c.Id)).toEqual([parked.Id])
    await s.api('DELETE', `/v2/serverless/${ep}`)
    await until(async () => (await containersOf(ep)).length === 0, 30_000, 'the container removed')
  }, 90_000)

  it('reports a failed pull as IMAGE_PULL_FAILED and backs off like a crash loop', async () => {
    // Nothing listens on port 1: the engine cannot reach that registry.
    const ep = (
      await createEndpoint(
        s,
        endpointBody('127.0.0.1:1/nobody/missing:1', {
          name: 'unpullable',
          workers: { min: 1, max: 1, idleTimeout: 60 },
        }),
      )
    ).id
    const unhealthy = await until(
      async () => (await workers(ep)).workers.find((w: { status: string }) => w.status === 'UNHEALTHY'),
      30_000,
      'an UNHEALTHY worker',
    )
    expect(unhealthy.lastError).toMatch(/^IMAGE_PULL_FAILED: /)
    expect(unhealthy.nextStartAt).toEqual(expect.any(String))
    const record = (await s.hangar.store.workers.listRecent(ep, 5))[0]
    expect(record).toMatchObject({ state: 'FAILED', lastError: expect.stringMatching(/^IMAGE_PULL_FAILED: /) })
    expect(s.hangar.workers.failures(ep).consecutive).toBeGreaterThanOrEqual(1)
    expect(await containersOf(ep)).toEqual([])
    await s.api('DELETE', `/v2/serverless/${ep}`)
  }, 60_000)

  it("pulls a private image with the credentials of /v2/registries, and fails with the registry's reason without them", async () => {
    const registry = await startFakeRegistry('acme-bot', 's3cret-token', [
      '/bin/sh',
      '-c',
      'echo pulled-and-running; sleep 600',
    ])
    try {
      const without = (
        await createEndpoint(
          s,
          endpointBody(registry.image, { name: 'no-login', workers: { min: 1, max: 1, idleTimeout: 60 } }),
        )
      ).id
      const failed = await until(
        async () => (await workers(without)).workers.find((w: { status: string }) => w.status === 'UNHEALTHY'),
        30_000,
        'an UNHEALTHY worker',
      )
      expect(failed.lastError).toMatch(/^IMAGE_PULL_FAILED: unauthorized/)
      await s.api('DELETE', `/v2/serverless/${without}`)

      const cred = await s.api('POST', '/v2/registries', {
        name: 'fake',
        username: 'acme-bot',
        password: 's3cret-token',
      })
      expect(cred.status).toBe(201)
      const ep = (
        await createEndpoint(
          s,
          endpointBody(registry.image, {
            name: 'with-login',
            registry: cred.body.id,
            workers: { min: 1, max: 1, idleTimeout: 60 },
          }),
        )
      ).id
      await until(
        async () => (await containersOf(ep)).some((c) => c.State === 'running'),
        60_000,
        'the private image running',
      )
      expect(registry.seen).toContain(`Basic ${Buffer.from('acme-bot:s3cret-token').toString('base64')}`)
      // The engine reports it running a moment before the start call returns.
      const view = await until(
        async () => (await workers(ep)).workers.find((w: { coldStart: unknown }) => w.coldStart !== null),
        30_000,
        'the start recorded',
      )
      expect(view).toMatchObject({ status: 'INITIALIZING', startPhase: 'STARTING', runtime: 'docker' })
      expect(view.coldStart.pullMs).toBeGreaterThan(0)
      await s.api('DELETE', `/v2/serverless/${ep}`)
      await until(async () => (await containersOf(ep)).length === 0, 30_000, 'the container removed')
    } finally {
      await docker
        .getImage(registry.image)
        .remove({ force: true })
        .catch(() => undefined)
      await registry.close()
    }
  }, 120_000)
})
