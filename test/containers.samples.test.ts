import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sampleImageRef } from '../src/runtime/docker/sampleImages.js'
import { containerEnv, containerSkipReason } from './helpers/containers.js'
import { createEndpoint, jobCall } from './helpers/endpoints.js'
import { createPod, portUrl, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const skip = containerSkipReason()
if (skip) console.warn(skip)

/** The official templates on an engine with no registry: their images are built from what Hangar ships. */
describe.skipIf(skip !== null)('sample images on Podman, without a registry', () => {
  let s: TestServer
  let docker: Docker

  beforeAll(async () => {
    docker = new Docker({ socketPath: new URL(containerEnv.dockerHost!).pathname })
    // As a user sets it: the address (and what this test machine needs), the network left to its default.
    s = await startTestServer({
      engine: { address: containerEnv.dockerHost, gpus: 'none', cgroupParent: containerEnv.cgroupParent },
    })
  })
  afterAll(async () => {
    await s?.stop()
  })

  it('a job completes on the hangar-echo template, in a container of localhost/hangar/echo', async () => {
    const ep = (
      await createEndpoint(s, {
        name: 'from-template',
        type: 'QUEUE',
        templateId: 'hangar-echo',
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
        workers: { min: 0, max: 1, idleTimeout: 60 },
      })
    ).id
    const done = (await jobCall(s, 'POST', `/v2/${ep}/runsync?wait=60000`, { input: { hello: 'no registry' } })).body
    const final =
      done.status === 'COMPLETED'
        ? done
        : await until(
            async () => {
              const r = (await jobCall(s, 'GET', `/v2/${ep}/status/${done.id}`)).body
              return r.status === 'COMPLETED' || r.status === 'FAILED' ? r : undefined
            },
            90_000,
            'the job ended',
          )
    expect(final).toMatchObject({ status: 'COMPLETED', output: { hello: 'no registry' } })
    const [c] = await docker.listContainers({ filters: JSON.stringify({ label: [`io.hangar.endpoint=${ep}`] }) })
    expect(c.Image).toBe(sampleImageRef('echo'))
    expect((await docker.getImage(sampleImageRef('echo')).inspect()).RepoTags).toContain(sampleImageRef('echo'))
    await s.api('DELETE', `/v2/serverless/${ep}`)
  }, 150_000)

  it('a pod from the hangar-pod template runs and serves its port', async () => {
    const pod = await createPod(s, { name: 'sample-pod', templateId: 'hangar-pod', cpu: { id: 'cpu3c', vcpuCount: 2 } })
    const running = await waitPod(s, pod.id, 'RUNNING', undefined, 90_000)
    expect(running.image).toBe('hangar/pod:latest')
    const info = await until(
      () =>
        fetch(portUrl(running, 8080))
          .then((r) => r.json())
          .catch(() => undefined),
      30_000,
      'the pod answers on 8080',
    )
    expect(info).toMatchObject({ boots: 1 })
    await s.api('DELETE', `/v2/pods/${pod.id}`)
  }, 150_000)
})
