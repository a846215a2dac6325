import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall } from '../helpers/endpoints.js'
import { spawnServe, type ServeProcess } from '../helpers/process.js'
import { startTestServer } from '../helpers/server.js'
import { FORWARDER_NAME } from '../../src/runtime/process/forwarder.js'
import { alive } from '../helpers/pods.js'

const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('after a crash: at-least-once, with ways to cope', () => {
  const dirs: string[] = []
  const procs: ServeProcess[] = []
  afterAll(() => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL')
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })

  it('gives every webhook delivery an id that stays the same on each attempt and across a restart, each attempt its own timestamp', async () => {
    const calls: IncomingHttpHeaders[] = []
    const rx: Server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        calls.push(req.headers)
        res.statusCode = calls.length === 1 ? 500 : 200
        res.end()
      })
    })
    await new Promise<void>((r) => rx.listen(0, '127.0.0.1', r))
    const hook = `http://127.0.0.1:${(rx.address() as { port: number }).port}/hook`
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-wh-'))
    dirs.push(dataDir)
    try {
      const config = { jobs: { webhookRetryDelayMs: 1_500 } }
      const first = await startTestServer(config, { dataDir })
      const ep = await createEndpoint(first, endpointBody('hangar/echo:latest'))
      const r = await jobCall(first, 'POST', `/v2/${ep.id}/runsync`, { input: { v: 1 }, webhook: hook })
      expect(r.body.status).toBe('COMPLETED')
      await until('the first attempt', () => calls.length === 1, 20_000)
      // The control plane goes away before the retry; the next start resumes the delivery.
      await first.stop()
      const second = await startTestServer(config, { dataDir })
      try {
        await until('the retry after the restart', () => calls.length === 2, 20_000)
      } finally {
        await second.stop()
      }
      expect(calls[0]['webhook-id']).toMatch(/^wh_/)
      expect(calls[1]['webhook-id']).toBe(calls[0]['webhook-id'])
      // The timestamp is the attempt's own (Standard Webhooks receivers refuse one far from their clock), so a
      // retry after the restart is not signed with the first attempt's time.
      expect(Number(calls[1]['webhook-timestamp'])).toBeGreaterThan(Number(calls[0]['webhook-timestamp']))
    } finally {
      await new Promise((r) => rx.close(r))
    }
  })

  it('ends a TypeScript SDK worker whose control plane is gone within its orphan timeout', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-orphan-'))
    dirs.push(dataDir)
    const configFile = join(dataDir, 'config.json')
    const echo = join(import.meta.dirname, '..', '..', 'dist', 'sampleWorkers', 'echo.js')
    writeFileSync(
      configFile,
      JSON.stringify({
        fleet: { detectGpus: false },
        jobs: { pingIntervalMs: 500 },
        images: {
          'test/orphan:latest': { command: [process.execPath, echo], env: { HANGAR_ORPHAN_TIMEOUT_MS: '3000' } },
        },
      }),
    )
    const server = await spawnServe(join(dataDir, 'data'), { HANGAR_CONFIG: configFile })
    procs.push(server)
    const key = readFileSync(join(dataDir, 'data', 'admin-key'), 'utf8').trim()
    const res = await fetch(`${server.url}/v2/serverless`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(endpointBody('test/orphan:latest', { workers: { min: 1, max: 1, idleTimeout: 60 } })),
    })
    expect(res.status).toBe(201)
    const ep = ((await res.json()) as { id: string }).id
    const health = async () =>
      (
        (await (await fetch(`${server.url}/v2/${ep}/health`, { headers: { authorization: key } })).json()) as {
          workers: { ready: number; idle: number }
        }
      ).workers
    await until('a ready worker', async () => (await health()).ready + (await health()).idle >= 1, 30_000)
    // As root the sandbox's relays (forwarder.ts) are the control plane's children too; they end with the sandbox.
    const children = readFileSync(`/proc/${server.child.pid}/task/${server.child.pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number)
      .filter((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== FORWARDER_NAME)
    expect(children.length).toBe(1)
    const worker = children[0]
    // While the control plane lives the worker stays, well past its orphan timeout.
    await new Promise((r) => setTimeout(r, 4_000))
    expect(alive(worker)).toBe(true)
    server.child.kill('SIGKILL')
    await server.exited
    const killedAt = Date.now()
    await until('the orphaned worker to end', () => !alive(worker), 20_000)
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(2_000)
  })
})
