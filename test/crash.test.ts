import Database from 'better-sqlite3'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { serveWithConfig } from './helpers/process.js'
import { pidOf } from './helpers/runtime.js'
import { alive } from './helpers/pods.js'

/** Waits (briefly) for processes sent SIGKILL to be gone. */
async function gone(pids: number[]): Promise<number[]> {
  const until = Date.now() + 5_000
  while (pids.some(alive) && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  return pids.filter(alive)
}

describe('a control plane killed with SIGKILL under load', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-crash-'))
  const configFile = join(dataDir, 'config.json')
  const procs: ChildProcess[] = []
  afterAll(() => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('loses no accepted job or result, and stops the orphaned workers on restart', async () => {
    writeFileSync(
      configFile,
      JSON.stringify({
        host: '127.0.0.1',
        port: 0,
        logLevel: 'silent',
        fleet: { detectGpus: false },
        jobs: { pingIntervalMs: 500 },
      }),
    )
    const first = await serveWithConfig(dataDir, configFile)
    procs.push(first.proc)
    const key = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()
    const call = async (url: string, path: string, method = 'GET', body?: unknown) => {
      const res = await fetch(url + path, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      return { status: res.status, body: (await res.json()) as any }
    }
    const created = await call(first.url, '/v2/serverless', 'POST', {
      name: 'crash',
      type: 'QUEUE',
      image: 'hangar/sleep:latest',
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
      workers: { min: 0, max: 2 },
    })
    expect(created.status).toBe(201)
    const ep = created.body.id as string

    // Submissions keep arriving while the process is killed: those answered 200 were accepted.
    const accepted: string[] = []
    const submissions = Array.from({ length: 40 }, (_, i) =>
      call(first.url, `/v2/${ep}/run`, 'POST', { input: { ms: 150, i } }).then(
        (r) => r.status === 200 && accepted.push(r.body.id),
        () => undefined,
      ),
    )
    const before = Date.now()
    while (accepted.length < 20 && Date.now() - before < 10_000) await new Promise((r) => setTimeout(r, 5))
    // Let some jobs start (and finish) so the kill catches work in every state.
    await new Promise((r) => setTimeout(r, 600))
    first.proc.kill('SIGKILL')
    await Promise.all(submissions)
    expect(accepted.length).toBeGreaterThanOrEqual(20)

    const db = new Database(join(dataDir, 'hangar.db'), { readonly: true })
    const orphans = (
      db
        .prepare(`SELECT runtime_ref FROM workers WHERE state NOT IN ('EXITED', 'FAILED') AND runtime_ref IS NOT NULL`)
        .all() as Array<{ runtime_ref: string }>
    ).map((r) => pidOf(r.runtime_ref))
    const states = db.prepare(`SELECT status, count(*) AS n FROM jobs GROUP BY status`).all()
    db.close()
    expect(orphans.length).toBeGreaterThan(0)
    expect(orphans.every(alive)).toBe(true)
    expect(states.length).toBeGreaterThan(0)

    const second = await serveWithConfig(dataDir, configFile)
    procs.push(second.proc)
    expect(await gone(orphans)).toEqual([])
    for (const id of accepted) {
      const r = await call(second.url, `/v2/${ep}/status-sync/${id}?wait=60000`)
      expect(r.status, id).toBe(200)
      expect(r.body.status, id).toBe('COMPLETED')
      expect(r.body.output).toEqual({ slept: 150 })
    }

    // A graceful stop leaves no worker behind.
    const db2 = new Database(join(dataDir, 'hangar.db'), { readonly: true })
    const workers2 = (
      db2
        .prepare(`SELECT runtime_ref FROM workers WHERE state NOT IN ('EXITED', 'FAILED') AND runtime_ref IS NOT NULL`)
        .all() as Array<{ runtime_ref: string }>
    ).map((r) => pidOf(r.runtime_ref))
    db2.close()
    second.proc.kill('SIGTERM')
    await new Promise((r) => second.proc.once('exit', r))
    expect(await gone(workers2)).toEqual([])
  }, 120_000)
})
