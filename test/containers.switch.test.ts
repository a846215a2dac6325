import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { containerEnv, containerSkipReason } from './helpers/containers.js'
import { alive, pidOf } from './helpers/pods.js'
import { spawnServe, type ServeProcess } from './helpers/process.js'
import { until } from './helpers/until.js'

const skip = containerSkipReason()
if (skip) console.warn(skip)

/** Started with local processes, then (same data dir) with an engine: the process programs must not leak. */
describe.skipIf(skip !== null)('switching this machine from processes to an engine', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-switch-'))
  const key = 'hk_switch_test_admin_key_0123456789abcd'
  const servers: ServeProcess[] = []
  const pids: number[] = []
  afterAll(async () => {
    for (const s of servers) if (s.child.exitCode === null) s.child.kill('SIGKILL')
    for (const pid of pids) if (alive(pid)) process.kill(-pid, 'SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
  })
  const call = async (url: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined }
  }
  const programPid = (kind: string, id: string) =>
    pidOf(JSON.parse(readFileSync(join(dataDir, kind, id, 'workload.json'), 'utf8')).ref)!

  it('stops the process pods and workers of the previous run for real and says why in the pod log', {
    timeout: 120_000,
  }, async () => {
    const first = await spawnServe(dataDir, { HANGAR_ADMIN_API_KEY: key })
    servers.push(first)
    const pod = (
      await call(first.url, 'POST', '/v2/pods', {
        name: 'switched',
        image: 'hangar/pod:latest',
        cpu: { id: 'cpu3c', vcpuCount: 2 },
        ports: ['8080/http'],
      })
    ).body
    const ep = (
      await call(first.url, 'POST', '/v2/serverless', {
        name: 'kept-warm',
        type: 'QUEUE',
        image: 'hangar/echo:latest',
        cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
        scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
        workers: { min: 1, max: 1, idleTimeout: 60 },
      })
    ).body
    await until(
      async () => (await call(first.url, 'GET', `/v2/pods/${pod.id}`)).body?.status === 'RUNNING',
      30_000,
      'pod RUNNING',
    )
    const worker = await until(
      async () =>
        (await call(first.url, 'GET', `/v2/serverless/${ep.id}/workers`)).body?.workers?.find(
          (w: { status: string }) => w.status === 'IDLE',
        ),
      30_000,
      'a worker IDLE',
    )
    const podPid = programPid('pods', pod.id)
    const workerPid = programPid('workers', worker.id)
    pids.push(podPid, workerPid)
    first.child.kill('SIGKILL')
    await first.exited
    expect(alive(podPid)).toBe(true)

    const engine = JSON.stringify({
      address: containerEnv.dockerHost,
      network: 'host',
      gpus: 'none',
      cgroupParent: containerEnv.cgroupParent,
    })
    const second = await spawnServe(dataDir, { HANGAR_ADMIN_API_KEY: key, HANGAR_ENGINE: engine })
    servers.push(second)
    await until(async () => !alive(podPid) && !alive(workerPid), 20_000, 'the process programs stopped')
    const log = await until(
      async () => {
        const text = readFileSync(join(dataDir, 'pod-logs', `${pod.id}.log`), 'utf8')
        return text.includes('another runtime') ? text : undefined
      },
      20_000,
      'the pod log saying why',
    )
    expect(log).toContain(
      `it ran as a local process, and host local now runs containers (docker), so its program was stopped: starting it again`,
    )
    await call(second.url, 'DELETE', `/v2/pods/${pod.id}`)
    await call(second.url, 'DELETE', `/v2/serverless/${ep.id}`)
  })
})
