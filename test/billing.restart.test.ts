import Database from 'better-sqlite3'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { startTestServer } from './helpers/server.js'

const H = 3_600_000
const ROOT = join(import.meta.dirname, '..')

describe('billing across control-plane restarts', () => {
  const dirs: string[] = []
  const procs: ChildProcess[] = []
  afterAll(() => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL')
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })

  it('after a clean restart bills running volumes without a gap or a double and a stopped worker up to its stop', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-billing-restart-'))
    dirs.push(dataDir)
    const clock = new ManualClock()
    clock.set(Date.parse('2026-03-14T10:00:00Z'))
    const first = await startTestServer({}, { clock, dataDir })
    const vol = (await first.api('POST', '/v2/network-volumes', { name: 'kept', size: 73, dataCenter: 'LOCAL-1' })).body
    const ep = (await createEndpoint(first, endpointBody('hangar/echo:latest', { name: 'restart', disk: 1 }))).id
    expect((await jobCall(first, 'POST', `/v2/${ep}/runsync`, { input: {} })).body.status).toBe('COMPLETED')
    clock.advance(H)
    await first.stop() // stops the worker: its interval closes now, at 11:00
    clock.advance(2 * H) // down for two hours
    const second = await startTestServer({}, { clock, dataDir })
    try {
      clock.advance(H)
      await second.hangar.meter.flush()
      const range = 'startTime=2026-03-14T00:00:00Z&endTime=2026-03-15T00:00:00Z'
      // 73 GB x 0.07 USD per GB-month x 4 h / 730 h = 0.028, counted once.
      const volumes = (await second.api('GET', `/v2/billing/network-volumes?${range}`)).body
      expect(volumes.records.map((r: any) => [r.networkVolumeId, r.totalAmount])).toEqual([[vol.id, 0.028]])
      // The worker: 1 h of 2 cpu3c vCPUs (0.072) and 1 GB of disk (0.000136), not the downtime.
      const serverless = (await second.api('GET', `/v2/billing/serverless?${range}`)).body
      expect(serverless.metadata.totals).toMatchObject({ cpuAmount: 0.072, diskAmount: 0.000136 })
      const open = await second.hangar.store.usage.listOpen()
      expect(open.map((i) => i.resourceId)).toEqual([vol.id])
    } finally {
      await second.stop()
    }
  })

  it('after a SIGKILL bills the volume on and the lost worker up to the last alive note, never past the crash', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-billing-crash-'))
    dirs.push(dataDir)
    const configFile = join(dataDir, 'config.json')
    writeFileSync(
      configFile,
      JSON.stringify({
        host: '127.0.0.1',
        port: 0,
        logLevel: 'silent',
        fleet: { detectGpus: false },
        billing: { checkpointMs: 200 },
      }),
    )
    const serve = () =>
      new Promise<{ proc: ChildProcess; url: string }>((resolve, reject) => {
        const proc = spawn(
          process.execPath,
          [join(ROOT, 'bin', 'hangar.js'), 'serve', '--data-dir', join(dataDir, 'data'), '--config', configFile],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        )
        procs.push(proc)
        let out = ''
        proc.stdout!.on('data', (c) => {
          out += c
          const m = /listening on (\S+)/.exec(out)
          if (m) resolve({ proc, url: m[1] })
        })
        proc.stderr!.on('data', (c) => (out += c))
        proc.once('exit', (code) => reject(new Error(`hangar exited (${code}):\n${out}`)))
      })
    const first = await serve()
    const key = readFileSync(join(dataDir, 'data', 'admin-key'), 'utf8').trim()
    const call = async (url: string, path: string, method = 'GET', body?: unknown) => {
      const res = await fetch(url + path, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      return (await res.json()) as any
    }
    const vol = await call(first.url, '/v2/network-volumes', 'POST', { name: 'v', size: 10, dataCenter: 'LOCAL-1' })
    const ep = (await call(first.url, '/v2/serverless', 'POST', endpointBody('hangar/echo:latest', { name: 'crash' })))
      .id
    expect((await call(first.url, `/v2/${ep}/runsync`, 'POST', { input: {} })).status).toBe('COMPLETED')
    await new Promise((r) => setTimeout(r, 1_000))
    const killedAt = Date.now()
    first.proc.kill('SIGKILL')
    await new Promise((r) => first.proc.once('exit', r))
    await new Promise((r) => setTimeout(r, 500))
    const second = await serve()
    const restartedAt = Date.now()
    second.proc.kill('SIGTERM')
    await new Promise((r) => second.proc.once('exit', r))

    const db = new Database(join(dataDir, 'data', 'hangar.db'), { readonly: true })
    const rows = db
      .prepare('SELECT resource_id, component, started_at, ended_at FROM usage_intervals ORDER BY id')
      .all() as Array<{ resource_id: string; component: string; started_at: number; ended_at: number | null }>
    db.close()
    const worker = rows.filter((r) => r.resource_id === ep)
    expect(worker.map((r) => r.component).sort()).toEqual(['cpu', 'disk'])
    for (const r of worker) {
      // Closed at the last note: at most one checkpoint interval (plus scheduling slack) before the kill, never after it.
      expect(r.ended_at).not.toBeNull()
      expect(r.ended_at!).toBeLessThanOrEqual(killedAt)
      expect(r.ended_at!).toBeGreaterThan(killedAt - 1_000)
    }
    // The volume: one interval from its creation, still open (it outlived both runs).
    const volume = rows.filter((r) => r.resource_id === vol.id)
    expect(volume).toHaveLength(1)
    expect(volume[0].ended_at).toBeNull()
    expect(volume[0].started_at).toBeLessThan(killedAt)
    expect(restartedAt).toBeGreaterThan(killedAt)
  }, 60_000)
})
