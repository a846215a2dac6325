import Database from 'better-sqlite3'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { alive, pidOf, portUrl } from './helpers/pods.js'
import { spawnServe, type ServeProcess } from './helpers/process.js'
import { until } from './helpers/until.js'

/** The control plane SIGKILLed with pods running, then started again on the same data dir. */
describe('pods across a control-plane crash', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-pods-crash-'))
  const key = 'hk_pods_restart_test_admin_key_0123456789'
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
  const waitRunning = (url: string, id: string) =>
    until(
      async () =>
        (await call(url, 'GET', `/v2/pods/${id}`)).body?.status === 'RUNNING'
          ? (await call(url, 'GET', `/v2/pods/${id}`)).body
          : undefined,
      20_000,
      `pod ${id} RUNNING`,
    )
  /** The pid of the pod's program, from the process runtime's record beside it. */
  const programPid = (id: string) =>
    pidOf(JSON.parse(readFileSync(join(dataDir, 'pods', id, 'workload.json'), 'utf8')).ref)!
  const info = (pod: any) =>
    until(
      () =>
        fetch(portUrl(pod, 8080))
          .then((r) => r.json())
          .catch(() => undefined),
      10_000,
      'pod port',
    )
  const logLines = async (url: string, id: string) => {
    const ac = new AbortController()
    const res = await fetch(`${url}/v2/pods/${id}/logs?tail=1000&source=system`, {
      headers: { authorization: `Bearer ${key}` },
      signal: ac.signal,
    })
    let text = ''
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    const end = Date.now() + 1_000
    while (Date.now() < end) {
      const chunk = await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), 300))])
      if (!chunk || chunk.done) break
      text += Buffer.from(chunk.value).toString()
    }
    ac.abort()
    return [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1]).line as string)
  }

  it('adopts pods whose program still runs, restarts (and says so) those whose program is gone, removes orphans', {
    timeout: 120_000,
  }, async () => {
    // Two `hangar serve` starts: on a loaded machine each can take many seconds.
    const first = await spawnServe(dataDir, { HANGAR_ADMIN_API_KEY: key })
    servers.push(first)
    const body = (name: string, extra: object) => ({ name, image: 'hangar/pod:latest', ports: ['8080/http'], ...extra })
    const kept = (
      await call(
        first.url,
        'POST',
        '/v2/pods',
        body('kept', { gpu: { id: 'NVIDIA L4' }, mounts: { persistent: { size: 10, path: '/workspace' } } }),
      )
    ).body
    const lost = (await call(first.url, 'POST', '/v2/pods', body('lost', { cpu: { id: 'cpu3c', vcpuCount: 2 } }))).body
    const orphan = (await call(first.url, 'POST', '/v2/pods', body('orphan', { cpu: { id: 'cpu3c', vcpuCount: 2 } })))
      .body
    const keptPod = await waitRunning(first.url, kept.id)
    await waitRunning(first.url, lost.id)
    await waitRunning(first.url, orphan.id)
    const orphanPid = programPid(orphan.id)
    pids.push(orphanPid)
    expect(await info(keptPod)).toMatchObject({ boots: 1 })
    const keptPid = programPid(kept.id)
    const lostPid = programPid(lost.id)
    pids.push(keptPid, lostPid)

    first.child.kill('SIGKILL')
    await first.exited
    expect(alive(keptPid)).toBe(true)
    // While the control plane is down, one program dies.
    process.kill(-lostPid, 'SIGKILL')
    await until(async () => !alive(lostPid), 5_000, 'program gone')
    // And one pod's record is lost (as if its create never committed): its program is an orphan.
    const db = new Database(join(dataDir, 'hangar.db'))
    db.prepare('DELETE FROM pods WHERE id = ?').run(orphan.id)
    db.close()

    const second = await spawnServe(dataDir, { HANGAR_ADMIN_API_KEY: key })
    servers.push(second)
    // Adopted: the same process, still serving on the same port, never restarted.
    const adopted = (await call(second.url, 'GET', `/v2/pods/${kept.id}`)).body
    expect(adopted.status).toBe('RUNNING')
    expect(adopted.runtime.ports).toEqual(keptPod.runtime.ports)
    expect(programPid(kept.id)).toBe(keptPid)
    expect(await info(adopted)).toMatchObject({ boots: 1 })
    // Its GPU is still held: the catalog shows it taken.
    expect(
      (await call(second.url, 'GET', '/v2/catalog/gpus/NVIDIA%20L4?include=AVAILABILITY&product=POD')).body.stock,
    ).toEqual({ total: 1, free: 0 })
    // Restarted: never RUNNING without a program; its log says what happened.
    const restarted = await waitRunning(second.url, lost.id)
    const newPid = programPid(lost.id)
    pids.push(newPid)
    expect(newPid).not.toBe(lostPid)
    expect(alive(newPid)).toBe(true)
    expect(await info(restarted)).toMatchObject({ podId: lost.id })
    expect(await logLines(second.url, lost.id)).toContain(
      'the control plane restarted and the program was gone: starting it again',
    )

    // No program runs that no pod claims.
    expect(alive(orphanPid)).toBe(false)

    // The adopted program is stopped like any other.
    expect((await call(second.url, 'POST', `/v2/pods/${kept.id}/action`, { action: 'stop' })).status).toBe(200)
    await until(async () => !alive(keptPid), 5_000, 'adopted program stopped')
    for (const id of [kept.id, lost.id]) expect((await call(second.url, 'DELETE', `/v2/pods/${id}`)).status).toBe(204)
    expect(alive(newPid)).toBe(false)
    second.child.kill('SIGTERM')
    await second.exited
  })
})
