import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { spawnServe } from './helpers/process.js'

const BIN = fileURLToPath(new URL('../bin/hangar.js', import.meta.url))

/** Runs `hangar serve` expecting it to fail; resolves with its exit code and output. */
function serveFailing(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'serve', ...args], {
      env: { ...process.env, HANGAR_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    // Should it start after all, stop it: the assertions on the output will say what went wrong.
    const timer = setTimeout(() => child.kill('SIGTERM'), 60_000)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })
}

describe('hangar serve start-up', { timeout: 180_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-startup-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('refuses a second server on the same data dir, naming the running one; the first keeps serving', async () => {
    const dataDir = join(dir, 'locked')
    const first = await spawnServe(dataDir)
    try {
      const second = await serveFailing(['--port', '0', '--data-dir', dataDir])
      expect(second.code).toBe(1)
      expect(second.output).toContain(`data dir ${dataDir} is in use by another Hangar (pid ${first.child.pid}`)
      expect(second.output).not.toMatch(/listening on/)
      const key = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()
      expect((await fetch(`${first.url}/v2/serverless`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(
        200,
      )
    } finally {
      first.child.kill('SIGTERM')
      expect(await first.exited).toBe(0)
    }
    // Stopped in order, it gave the dir up.
    expect(existsSync(join(dataDir, 'hangar.lock'))).toBe(false)
  })

  it('takes over the lock of a server that died without releasing it', async () => {
    const dataDir = join(dir, 'stale')
    mkdirSync(dataDir, { recursive: true })
    // A pid that no longer runs: a child that has exited and been reaped.
    const dead = spawn(process.execPath, ['-e', ''])
    await new Promise((r) => dead.on('close', r))
    writeFileSync(
      join(dataDir, 'hangar.lock'),
      JSON.stringify({ pid: dead.pid, host: hostname(), startedAt: '2026-01-01T00:00:00.000Z', procStart: null }),
    )
    const p = await spawnServe(dataDir)
    expect(JSON.parse(readFileSync(join(dataDir, 'hangar.lock'), 'utf8')).pid).toBe(p.child.pid)
    p.child.kill('SIGTERM')
    await p.exited
  })

  it('on a port in use says so and creates no admin key; the next start shows the key', async () => {
    const dataDir = join(dir, 'busy')
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as AddressInfo).port
    try {
      const r = await serveFailing(['--port', String(port), '--data-dir', dataDir])
      expect(r.code).toBe(1)
      expect(r.output).toContain(`cannot listen on 127.0.0.1:${port}: the address is in use`)
      expect(existsSync(join(dataDir, 'admin-key'))).toBe(false)
      expect(existsSync(join(dataDir, 'hangar.lock'))).toBe(false)
    } finally {
      await new Promise((r) => blocker.close(r))
    }
    const p = await spawnServe(dataDir)
    try {
      const key = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()
      expect(p.output()).toContain(`admin key:   ${key}`)
    } finally {
      p.child.kill('SIGTERM')
      await p.exited
    }
  })

  it('names the environment variable of a bad setting', async () => {
    const r = await serveFailing(['--port', '0', '--data-dir', join(dir, 'badkey')], { HANGAR_ADMIN_API_KEY: 'short' })
    expect(r.code).toBe(1)
    expect(r.output).toMatch(/HANGAR_ADMIN_API_KEY \(\/adminApiKey\): must not have fewer than 16 characters/)
  })

  it('redirects / to the console (the API docs without one), and logs one JSON line per request at info when not on a terminal', async () => {
    const p = await spawnServe(join(dir, 'logs'), { HANGAR_LOG_LEVEL: 'info' })
    try {
      const res = await fetch(`${p.url}/`, { redirect: 'manual' })
      expect(res.status).toBe(302)
      expect(res.headers.get('location')).toMatch(/^\/(console\/|docs)$/)
      await fetch(`${p.url}/v2/serverless`)
      const until = Date.now() + 20_000
      while (!/"url":"\/v2\/serverless"/.test(p.output()) && Date.now() < until)
        await new Promise((r) => setTimeout(r, 50))
      const line = p
        .output()
        .split('\n')
        .find((l) => l.includes('"url":"/v2/serverless"'))
      expect(JSON.parse(line!)).toMatchObject({
        level: 30,
        method: 'GET',
        url: '/v2/serverless',
        status: 401,
        msg: 'GET /v2/serverless 401',
      })
    } finally {
      p.child.kill('SIGTERM')
      await p.exited
    }
  })

  it('logs a crashing worker once per crash on a terminal, its last output with its line breaks', async () => {
    const key = 'hk_crash-log-test-key-0123456789'
    const p = await spawnServe(join(dir, 'pretty-crash'), {
      HANGAR_LOG_LEVEL: 'info',
      HANGAR_LOG_FORMAT: 'pretty',
      HANGAR_ADMIN_API_KEY: key,
    })
    try {
      const res = await fetch(`${p.url}/v2/serverless`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'crashes',
          type: 'QUEUE',
          image: 'hangar/echo:latest',
          args: `node -e "console.error('first line'); console.error('second line'); process.exit(3)"`,
          cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
          scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
          workers: { min: 1, max: 1 },
        }),
      })
      expect(res.status).toBe(201)
      const until = Date.now() + 20_000
      // Until the replacement starts after the back-off: everything about the first crash is logged by then.
      while (!/WARN.*worker failed[\s\S]*INFO.*worker started/.test(p.output()) && Date.now() < until)
        await new Promise((r) => setTimeout(r, 50))
      const out = p.output()
      const first = out.split('\n').find((l) => /WARN.*worker/.test(l))!
      expect(first).toMatch(/WARN.*: worker failed: replaced after the back-off$/)
      const workerId = /workerId: "(\w+)"/.exec(out.slice(out.indexOf(first)))![1]
      // Exactly one warning names this worker.
      const warnings = out
        .split(/\n(?=\[)/)
        .filter((entry) => entry.includes(`workerId: "${workerId}"`) && / WARN/.test(entry))
      expect(warnings).toHaveLength(1)
      // The reason keeps its lines (not one quoted string with \n in it).
      expect(warnings[0]).toMatch(
        /reason:\n\s+worker \w+ exited \(code 3\); its last output:\n\s+first line\n\s+second line/,
      )
    } finally {
      p.child.kill('SIGTERM')
      await p.exited
    }
  })

  it('prints readable log lines with HANGAR_LOG_FORMAT=pretty (the default on a terminal)', async () => {
    const p = await spawnServe(join(dir, 'pretty'), { HANGAR_LOG_LEVEL: 'info', HANGAR_LOG_FORMAT: 'pretty' })
    try {
      await fetch(`${p.url}/v2/serverless`)
      const until = Date.now() + 20_000
      while (!/GET \/v2\/serverless 401/.test(p.output()) && Date.now() < until)
        await new Promise((r) => setTimeout(r, 50))
      const line = p
        .output()
        .split('\n')
        .find((l) => l.includes('GET /v2/serverless 401'))
      expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO.*: GET \/v2\/serverless 401 \d+ ms$/)
      // One line per request: method, url and status are not repeated under it.
      const lines = p.output().split('\n')
      const next = lines[lines.indexOf(line!) + 1] ?? ''
      expect(next).not.toMatch(/^\s+(method|url|status|ms|reqId):/)
    } finally {
      p.child.kill('SIGTERM')
      await p.exited
    }
  })
})
