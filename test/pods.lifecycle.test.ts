import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PodTransition } from '../src/services/pods/PodEvents.js'
import {
  alive,
  createPod,
  pidOf,
  podBody,
  portUrl,
  readPodLogs,
  terminateAll,
  waitPod,
  waitPortAnswers,
} from './helpers/pods.js'
import { rawRequest } from './helpers/raw.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

/** The sample pod program (src/sampleWorkers/pod.ts) driven through a real server on the process runtime. */
describe('pod lifecycle', () => {
  let s: TestServer
  const transitions: PodTransition[] = []
  beforeAll(async () => {
    s = await startTestServer({ jobs: { stopGraceMs: 2_000 } })
    s.hangar.podEvents.on((t) => transitions.push(t))
    const keys = await s.api('PUT', '/v2/account/ssh-keys', { keys: ['ssh-ed25519 AAAAC3Nza me@laptop'] })
    expect(keys.status).toBe(200)
  })
  afterAll(async () => {
    await terminateAll(s)
    await s.stop()
  })

  const record = async (id: string) => (await s.hangar.store.pods.get(id))!

  it('creates from a template, serves its port directly and through the proxy, keeps files across stop/start', async () => {
    const created = await createPod(s, {
      name: 'from-template',
      templateId: 'hangar-pod',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      env: { GREETING: 'hi' },
    })
    expect(created).toMatchObject({
      status: 'PROVISIONING',
      image: 'hangar/pod:latest',
      ports: ['8080/http', '22/tcp'],
      mounts: {},
      template: null,
      runtime: null,
    })
    // startSsh of the template injected the account's key; a CPU pod ignores the template's persistent mount.
    expect(created.env).toEqual({ GREETING: 'hi', PUBLIC_KEY: 'ssh-ed25519 AAAAC3Nza me@laptop' })
    const pod = await waitPod(s, created.id, 'RUNNING')
    expect(pod.actions).toEqual(['stop', 'restart', 'terminate'])
    expect(pod.cost).toBe(0.06)
    // Live metrics of the program's process tree: memory in use is real, so above 0 % of the flavor's 4 GB... or rounds to it.
    expect(pod.runtime).toMatchObject({
      uptime: expect.any(Number),
      gpus: [],
      cpu: { util: expect.any(Number) },
      memory: { util: expect.any(Number) },
    })
    expect(pod.startedAt).toEqual(expect.stringMatching(/Z$/))
    expect(pod.runtime.ports).toEqual([
      { private: 8080, public: expect.any(Number), type: 'http', ip: '127.0.0.1' },
      { private: 22, public: expect.any(Number), type: 'tcp', ip: '127.0.0.1' },
    ])
    expect(pod.ssh.direct).toEqual({
      host: '127.0.0.1',
      port: pod.runtime.ports[1].public,
      username: 'root',
      command: `ssh root@127.0.0.1 -p ${pod.runtime.ports[1].public}`,
    })
    const direct = await waitPortAnswers(pod, 8080)
    expect(direct).toMatchObject({ podId: pod.id, port: 8080, ssh: true, jupyter: false })

    const viaProxy = await fetch(`${s.url}/proxy/${pod.id}/8080/env/GREETING`, {
      headers: { authorization: `Bearer ${s.adminKey}` },
    })
    expect(viaProxy.status).toBe(200)
    expect(await viaProxy.json()).toEqual({ value: 'hi' })
    // The key is Hangar's, not the program's: it is checked and not passed on.
    expect((await fetch(`${s.url}/proxy/${pod.id}/8080/`)).status).toBe(401)
    expect(
      await (
        await fetch(`${s.url}/proxy/${pod.id}/8080/env/HTTP_AUTHORIZATION`, {
          headers: { authorization: `Bearer ${s.adminKey}` },
        })
      ).json(),
    ).toEqual({ value: null })
    const put = await fetch(`${s.url}/proxy/${pod.id}/8080/files/note.txt`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${s.adminKey}`, 'content-type': 'text/plain' },
      body: 'kept',
    })
    expect(put.status).toBe(201)
    // 22/tcp is not an HTTP port: the proxy does not serve it.
    expect((await s.api('GET', `/proxy/${pod.id}/22/`)).status).toBe(404)
    await s.api('DELETE', `/v2/pods/${pod.id}`)
  })

  it('proxies like /lb: hop-by-hop headers dropped both ways, a port that refuses the connection a 502 problem', async () => {
    const pod = await waitPod(
      s,
      (await createPod(s, podBody({ ports: ['8080/http', '8081/http'], env: { CLOSED_PORTS: '8081' } }))).id,
      'RUNNING',
    )
    await until(
      () =>
        fetch(portUrl(pod, 8080))
          .then((r) => r.ok)
          .catch(() => false),
      10_000,
      'port answering',
    )
    // A raw request: fetch refuses to send most of these headers.
    const a = await rawRequest(
      s.url,
      `GET /proxy/${pod.id}/8080/headers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.adminKey}\r\nProxy-Authorization: Basic dTpw\r\nTE: trailers\r\nProxy-Connection: keep-alive\r\nKeep-Alive: timeout=9\r\nConnection: close, X-Trace\r\nX-Trace: t\r\nX-App: a\r\n\r\n`,
    )
    expect(a.status).toBe(200)
    const seen = JSON.parse(a.body) as Record<string, string>
    for (const name of ['authorization', 'proxy-authorization', 'te', 'proxy-connection', 'keep-alive', 'x-trace'])
      expect(seen[name], name).toBeUndefined()
    expect(seen['x-app']).toBe('a')
    for (const name of ['proxy-authenticate', 'keep-alive', 'x-hop']) expect(a.headers[name], name).toBeUndefined()
    expect(a.headers['x-kept']).toBe('yes')

    const refused = await s.api('GET', `/proxy/${pod.id}/8081/`)
    expect(refused.status).toBe(502)
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    // Refused by the program's own network (sharing the host's), or accepted by the sandbox's and closed or reset at once.
    expect(refused.body.detail).toMatch(
      new RegExp(`^port 8081 of pod ${pod.id} failed the request: (ECONNREFUSED|ECONNRESET|UND_ERR_SOCKET)$`),
    )
    await s.api('DELETE', `/v2/pods/${pod.id}`)
  })

  it('keeps the persistent mount across stop/start, wipes the container disk, destroys the mount on terminate', async () => {
    const created = await createPod(
      s,
      podBody({ gpu: { id: 'NVIDIA L4' }, cpu: undefined, mounts: { persistent: { size: 10, path: '/workspace' } } }),
    )
    let pod = await waitPod(s, created.id, 'RUNNING')
    expect(pod).toMatchObject({
      gpu: { id: 'NVIDIA L4', count: 1 },
      dataCenterId: 'LOCAL-1',
      cudaVersion: '12.2',
      cost: 0.43,
    })
    await until(
      () =>
        fetch(`${portUrl(pod, 8080)}/files/a.txt`, { method: 'PUT', body: 'persisted' })
          .then((r) => r.status === 201)
          .catch(() => false),
      10_000,
      'write',
    )
    const firstPid = pidOf((await record(pod.id)).runtimeRef)!

    const stopped = await s.api('POST', `/v2/pods/${pod.id}/action`, { action: 'stop' })
    expect(stopped.status).toBe(200)
    expect(stopped.body).toMatchObject({
      status: 'EXITED',
      actions: ['start', 'terminate'],
      cost: 0,
      runtime: null,
      cudaVersion: '12.2',
      dataCenterId: 'LOCAL-1',
    })
    expect(alive(firstPid)).toBe(false)
    expect((await s.api('POST', `/v2/pods/${pod.id}/action`, { action: 'stop' })).status).toBe(409)

    const started = await s.api('POST', `/v2/pods/${pod.id}/action`, { action: 'start' })
    expect(started.status).toBe(200)
    pod = await waitPod(s, pod.id, 'RUNNING')
    const info = await waitPortAnswers(pod, 8080)
    expect(info).toMatchObject({ boots: 2, scratch: false })
    expect(await (await fetch(`${portUrl(pod, 8080)}/files/a.txt`)).text()).toBe('persisted')

    // restart: a new process, the same persistent files, a fresh container disk.
    const restarted = await s.api('POST', `/v2/pods/${pod.id}/action`, { action: 'restart' })
    expect(restarted.status).toBe(200)
    pod = await waitPod(s, pod.id, 'RUNNING')
    expect(await waitPortAnswers(pod, 8080)).toMatchObject({ boots: 3, scratch: false })

    const lastPid = pidOf((await record(pod.id)).runtimeRef)!
    const persistentDir = join(s.dataDir, 'persistent', 'local', `pod-${pod.id}`)
    expect(existsSync(join(persistentDir, 'a.txt'))).toBe(true)
    const terminated = await s.api('POST', `/v2/pods/${pod.id}/action`, { action: 'terminate' })
    expect(terminated.status).toBe(204)
    expect(alive(lastPid)).toBe(false)
    expect(existsSync(persistentDir)).toBe(false)
    expect((await s.api('GET', `/v2/pods/${pod.id}`)).status).toBe(404)
    expect(transitions.filter((t) => t.pod.id === pod.id).map((t) => `${t.from}>${t.to}`)).toEqual([
      'null>PROVISIONING',
      'PROVISIONING>STARTING',
      'STARTING>RUNNING',
      'RUNNING>EXITED',
      'EXITED>PROVISIONING',
      'PROVISIONING>STARTING',
      'STARTING>RUNNING',
      'RUNNING>PROVISIONING',
      'PROVISIONING>STARTING',
      'STARTING>RUNNING',
      'RUNNING>TERMINATED',
    ])
  })

  it('holds GPUs while it runs: catalog stock falls, a second pod is refused naming what is free', async () => {
    const stock = async () =>
      (await s.api('GET', '/v2/catalog/gpus/NVIDIA%20H100%2080GB%20HBM3?include=AVAILABILITY&product=POD')).body
    expect((await stock()).stock).toEqual({ total: 1, free: 1 })
    const created = await createPod(s, podBody({ gpu: { id: 'NVIDIA H100 80GB HBM3' }, cpu: undefined }))
    expect((await stock()).stock).toEqual({ total: 1, free: 0 })
    expect((await stock()).availability).toBe('NONE')
    const refused = await s.api('POST', '/v2/pods', podBody({ gpu: { id: 'NVIDIA H100 80GB HBM3' }, cpu: undefined }))
    expect(refused.status).toBe(400)
    expect(refused.body.errors).toEqual([
      'gpu: no capacity for 1 x NVIDIA H100 80GB HBM3: all GPUs of the selected GPU types (NVIDIA H100 80GB HBM3) are in use; 0 of 1 NVIDIA H100 80GB HBM3 GPUs are free',
    ])
    await waitPod(s, created.id, 'RUNNING')
    await s.api('POST', `/v2/pods/${created.id}/action`, { action: 'stop' })
    expect((await stock()).stock).toEqual({ total: 1, free: 1 })
    // Someone else takes the GPU while the pod is stopped: start is refused and the pod stays EXITED.
    const other = await createPod(s, podBody({ gpu: { id: 'NVIDIA H100 80GB HBM3' }, cpu: undefined }))
    const start = await s.api('POST', `/v2/pods/${created.id}/action`, { action: 'start' })
    expect(start.status).toBe(400)
    expect(start.body.errors[0]).toMatch(
      /^gpu: no capacity for 1 x NVIDIA H100 80GB HBM3: .*0 of 1 NVIDIA H100 80GB HBM3 GPUs are free$/,
    )
    expect((await s.api('GET', `/v2/pods/${created.id}`)).body.status).toBe('EXITED')
    await s.api('DELETE', `/v2/pods/${other.id}`)
    await s.api('DELETE', `/v2/pods/${created.id}`)
    expect((await stock()).stock).toEqual({ total: 1, free: 1 })
  })

  it('reports a program that ends by itself: exit 0 -> EXITED, non-zero -> ERROR, with the reason in system lines', async () => {
    const ok = await createPod(s, podBody({ env: { EXIT_AFTER_MS: '200' } }))
    const bad = await createPod(s, podBody({ env: { EXIT_AFTER_MS: '200', EXIT_CODE: '3' } }))
    await waitPod(s, ok.id, 'EXITED')
    const failed = await waitPod(s, bad.id, 'ERROR')
    expect(failed).toMatchObject({ actions: ['start', 'terminate'], runtime: null, cost: 0.06 })
    const lines = await readPodLogs(s, bad.id, { query: 'tail=1000', match: /the program failed/ })
    expect(lines.filter((e) => e.data.source === 'system').map((e) => e.data.line)).toContain(
      'the program failed (exit code 3): ERROR',
    )
    // A program that cannot start at all is ERROR too, and says why.
    const broken = await createPod(s, podBody({ image: 'no/such-image:1' }))
    await waitPod(s, broken.id, 'ERROR')
    const why = await readPodLogs(s, broken.id, { query: 'source=system', match: /could not be started/ })
    expect(why.at(-1)!.data.line).toMatch(/has no local command/)
    for (const p of [ok, bad, broken]) expect((await s.api('DELETE', `/v2/pods/${p.id}`)).status).toBe(204)
  })

  it('streams logs over SSE with tail, source and Last-Event-ID', async () => {
    const created = await createPod(s, podBody({ startJupyter: true }))
    const pod = await waitPod(s, created.id, 'RUNNING')
    expect(created.env.JUPYTER_PASSWORD).toMatch(/^[\w-]{16}$/)
    const url = portUrl(pod, 8080)
    expect(await waitPortAnswers(pod, 8080)).toMatchObject({ jupyter: true })
    expect(await (await fetch(`${url}/env/JUPYTER_PASSWORD`)).json()).toEqual({ value: created.env.JUPYTER_PASSWORD })
    const all = await readPodLogs(s, pod.id, { query: 'tail=1000', match: /GET \/env\/JUPYTER_PASSWORD/ })
    expect(all.some((e) => e.data.source === 'container' && /start #1/.test(e.data.line))).toBe(true)
    expect(all.every((e) => /^\d{4}-\d\d-\d\dT[\d:.]+Z\/\d{12}$/.test(e.id))).toBe(true)
    const last2 = await readPodLogs(s, pod.id, { query: 'tail=2', count: 2 })
    expect(last2.map((e) => e.id)).toEqual(all.slice(-2).map((e) => e.id))
    const system = await readPodLogs(s, pod.id, { query: 'source=system&tail=1000', match: /STARTING -> RUNNING/ })
    expect(system.every((e) => e.data.source === 'system')).toBe(true)
    // Resume after the third line: the rest of the history, then live lines.
    const resumed = readPodLogs(s, pod.id, { lastEventId: all[2].id, match: /GET \/live/ })
    await new Promise((r) => setTimeout(r, 300))
    await fetch(`${url}/live`)
    const events = await resumed
    expect(events[0].id).toBe(all[3].id)
    expect(events.at(-1)!.data).toMatchObject({ source: 'container', line: 'GET /live on port 8080' })
    await s.api('DELETE', `/v2/pods/${pod.id}`)
  })

  it('locks: stop and restart refused, a running change refused; unlocked PATCH restarts to apply', async () => {
    const created = await createPod(s, podBody())
    await waitPod(s, created.id, 'RUNNING')
    const locked = await s.api('PATCH', `/v2/pods/${created.id}`, { locked: true, name: 'renamed' })
    expect(locked.status).toBe(200)
    expect(locked.body).toMatchObject({ locked: true, name: 'renamed', status: 'RUNNING', actions: ['terminate'] })
    const stop = await s.api('POST', `/v2/pods/${created.id}/action`, { action: 'stop' })
    expect(stop.status).toBe(409)
    expect(stop.body.detail).toBe(`pod ${created.id} is locked: it cannot be stopped; PATCH {"locked": false} first`)
    expect((await s.api('POST', `/v2/pods/${created.id}/action`, { action: 'restart' })).status).toBe(409)
    const change = await s.api('PATCH', `/v2/pods/${created.id}`, { env: { A: '1' } })
    expect(change.status).toBe(409)
    const firstPid = pidOf((await record(created.id)).runtimeRef)!
    const applied = await s.api('PATCH', `/v2/pods/${created.id}`, { locked: false, env: { A: '2' } })
    expect(applied.status).toBe(200)
    expect(applied.body).toMatchObject({ locked: false, env: { A: '2' } })
    const pod = await waitPod(s, created.id, 'RUNNING')
    expect(alive(firstPid)).toBe(false)
    expect(
      await until(
        () =>
          fetch(`${portUrl(pod, 8080)}/env/A`)
            .then((r) => r.json())
            .catch(() => undefined),
        10_000,
        'port',
      ),
    ).toEqual({ value: '2' })
    await s.api('DELETE', `/v2/pods/${created.id}`)
  })
})
