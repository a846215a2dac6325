import { spawn } from 'node:child_process'
import { createServer, type AddressInfo } from 'node:net'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Command } from 'commander'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli/main.js'
import { buildProgram } from '../src/cli/program.js'
import { spawnServe, type ServeProcess } from './helpers/process.js'

const BIN = fileURLToPath(new URL('../bin/hangar.js', import.meta.url))

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs the built `hangar` command as a user would, with `env` added and `stdin` fed to it. */
function hangarIn(env: Record<string, string>, args: string[], stdin?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(stdin ?? '')
  })
}

/** Every command path of the tree, e.g. ['endpoints', 'create']. */
function commandPaths(cmd: Command, prefix: string[] = []): string[][] {
  return cmd.commands.flatMap((c) => [[...prefix, c.name()], ...commandPaths(c, [...prefix, c.name()])])
}

// Each command is a fresh node process; on a loaded machine a few take seconds each.
describe('hangar --help', { timeout: 120_000 }, () => {
  it('answers --help on every command and subcommand with its usage and exit code 0', async () => {
    const paths = commandPaths(buildProgram())
    expect(paths.length).toBeGreaterThan(40)
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    try {
      for (const path of [[], ...paths]) {
        out.mockClear()
        expect(await main([...path, '--help']), path.join(' ')).toBe(0)
        const text = out.mock.calls.map((c) => String(c[0])).join('')
        expect(text, path.join(' ')).toContain(`Usage: hangar${path.length ? ' ' + path.join(' ') : ''}`)
      }
    } finally {
      out.mockRestore()
    }
  })

  it('`hangar serve --help` prints the serve options and exits 0 (the real binary)', async () => {
    const r = await hangarIn({}, ['serve', '--help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/Usage: hangar serve/)
    expect(r.stdout).toMatch(/--data-dir/)
  })

  it('exits 2 on a wrong command line, naming the problem', async () => {
    const unknown = await hangarIn({}, ['endpoints', 'list', '--bogus'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toMatch(/unknown option '--bogus'/)
    const missing = await hangarIn({}, ['jobs', 'runsync'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/missing required argument 'endpoint'/)
    const badJson = await hangarIn({ HANGAR_API_KEY: 'hk_x' }, ['jobs', 'run', 'ep', '--input', '{nope'])
    expect(badJson.code).toBe(2)
    expect(badJson.stderr).toMatch(/--input: not valid JSON/)
  })
})

describe('hangar client commands against a running server', { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-cli-'))
  const dataDir = join(dir, 'data')
  let server: ServeProcess
  // The CLI finds the admin key in the data dir, as a user on the server machine would.
  const hangar = (...args: string[]) => hangarIn({ HANGAR_URL: server.url, HANGAR_DATA_DIR: dataDir }, args)
  /** Runs a command with --json, expects exit code 0 and returns the parsed output. */
  const json = async (...args: string[]) => {
    const r = await hangar(...args, '--json')
    expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0)
    return JSON.parse(r.stdout)
  }

  beforeAll(async () => {
    server = await spawnServe(dataDir)
  }, 120_000)
  afterAll(async () => {
    server?.child.kill('SIGTERM')
    await server?.exited
    rmSync(dir, { recursive: true, force: true })
  })

  it('accounts and keys: a key shown once, listed without it, revoked', async () => {
    expect(await json('accounts', 'create', 'acme')).toMatchObject({ name: 'acme', rateLimitExempt: false })
    expect((await hangar('accounts', 'list')).stdout).toMatch(/^ID\s+NAME\s+RATE LIMIT EXEMPT\s+CREATED\n.*acme/ms)

    const created = await hangar(
      'keys',
      'create',
      '--account',
      'acme',
      '--permission',
      'READ_ONLY',
      '--expires',
      '2099-01-01',
      '--json',
    )
    const key = JSON.parse(created.stdout)
    expect(key).toMatchObject({ permission: 'READ_ONLY', expiresAt: '2099-01-01T00:00:00.000Z', accountName: 'acme' })
    expect(key.key).toMatch(/^hk_/)
    expect(created.stderr).toMatch(/shown only now/)

    const restricted = await hangar(
      'keys',
      'create',
      '--account',
      'acme',
      '--permission',
      'RESTRICTED',
      '--endpoint',
      'doesnotexist',
    )
    expect(restricted.code).toBe(6)
    expect(restricted.stderr).toMatch(
      /^error: 400 Bad Request: endpointIds\[0\]: "doesnotexist" is not an endpoint of account "acme"/,
    )

    const listed = (await hangar('keys', 'list', '--account', 'acme')).stdout
    expect(listed).toContain(key.id)
    expect(listed).not.toContain(key.key)

    // A READ_ONLY key is refused a write: exit 4 with the problem's detail.
    const refused = await hangarIn({ HANGAR_URL: server.url, HANGAR_API_KEY: key.key }, [
      'templates',
      'create',
      '--name',
      't',
      '--image',
      'x',
    ])
    expect(refused.code).toBe(4)
    expect(refused.stderr).toMatch(/^error: 403 Forbidden: .*READ_ONLY/)

    expect((await json('keys', 'revoke', key.id)).revokedAt).toBeTruthy()
    const revoked = await hangarIn({ HANGAR_URL: server.url, HANGAR_API_KEY: key.key }, ['endpoints', 'list'])
    expect(revoked.code).toBe(4)
  })

  it('prints the problem and exits 5 for something that does not exist', async () => {
    const err = await hangar('keys', 'create', '--account', 'nobody', '--permission', 'ALL')
    expect(err.code).toBe(5)
    expect(err.stderr).toMatch(/error: 404 Not Found: account "nobody" was not found/)
  })

  it('prints every validation error of a rejected request and exits 6', async () => {
    const r = await hangar('endpoints', 'create', '--name', '', '--image', 'hangar/echo', '--cpu', 'cpu3c:3')
    expect(r.code).toBe(6)
    expect(r.stdout).toBe('')
    expect(r.stderr).toMatch(/^error: (400|422) /)
    expect(r.stderr).toMatch(/\n {2}- .*name/)
  })

  it('exits 3 when no server answers', async () => {
    // A port that was free a moment ago: nothing listens there.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const port = (probe.address() as AddressInfo).port
    await new Promise((resolve) => probe.close(resolve))
    const r = await hangarIn({ HANGAR_URL: `http://127.0.0.1:${port}`, HANGAR_API_KEY: 'hk_x' }, ['endpoints', 'list'])
    expect(r.code).toBe(3)
    expect(r.stderr).toMatch(new RegExp(`cannot reach Hangar at http://127.0.0.1:${port}: ECONNREFUSED`))
  })

  it('endpoints: create, get, list, update, releases, delete', async () => {
    const ep = await json(
      'endpoints',
      'create',
      '--name',
      'cli-ep',
      '--image',
      'hangar/echo',
      '--cpu',
      'cpu3c:2',
      '--max',
      '1',
      '--scaling',
      'QUEUE_DELAY:1',
      '--env',
      'A=1',
    )
    expect(ep).toMatchObject({
      name: 'cli-ep',
      type: 'QUEUE',
      image: 'hangar/echo',
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      workers: { max: 1 },
      scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
      env: { A: '1' },
    })
    expect(await json('endpoints', 'get', ep.id)).toMatchObject({ id: ep.id })
    expect((await hangar('endpoints', 'list')).stdout).toMatch(
      new RegExp(`${ep.id}\\s+cli-ep\\s+QUEUE\\s+hangar/echo\\s+cpu3c:2\\s+0-1\\s+QUEUE_DELAY 1s`),
    )

    const body = join(dir, 'patch.json')
    writeFileSync(body, JSON.stringify({ env: { A: '2' } }))
    expect(await json('endpoints', 'update', ep.id, '--body', `@${body}`, '--max', '2')).toMatchObject({
      env: { A: '2' },
      workers: { max: 2 },
    })
    const releases = await json('endpoints', 'releases', ep.id)
    expect(releases.releases.length).toBe(2)
    expect(releases.releases[0].diff).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'env.A' })]))
    expect((await hangar('endpoints', 'releases', ep.id)).stdout).toMatch(/endpointVersion:\s+2/)

    expect((await hangar('endpoints', 'delete', ep.id)).stdout).toBe(`deleted ${ep.id}\n`)
    expect((await hangar('endpoints', 'get', ep.id)).code).toBe(5)
  })

  it('jobs: runsync, run + status --wait, stream, health, workers and their logs', async () => {
    // A long idle timeout keeps the worker for the workers and logs commands.
    const echo = await json(
      'endpoints',
      'create',
      '--name',
      'echo',
      '--image',
      'hangar/echo',
      '--cpu',
      'cpu3c:2',
      '--max',
      '1',
      '--idle-timeout',
      '600',
      '--scaling',
      'QUEUE_DELAY:1',
    )
    const done = await json('jobs', 'runsync', echo.id, '--input', '{"hello":"world"}', '--wait', '60000')
    expect(done).toMatchObject({ status: 'COMPLETED', output: { hello: 'world' }, workerId: expect.any(String) })

    const queued = JSON.parse(
      (
        await hangarIn(
          { HANGAR_URL: server.url, HANGAR_DATA_DIR: dataDir },
          ['jobs', 'run', echo.id, '--input', '-', '--json'],
          '{"n":7}',
        )
      ).stdout,
    )
    expect(queued).toMatchObject({ status: 'IN_QUEUE' })
    expect(await json('jobs', 'status', echo.id, queued.id, '--wait', '60000')).toMatchObject({
      id: queued.id,
      status: 'COMPLETED',
      output: { n: 7 },
    })
    expect((await hangar('jobs', 'status', echo.id, queued.id)).stdout).toMatch(/^status:\s+COMPLETED$/m)

    const health = await json('jobs', 'health', echo.id)
    expect(health.jobs.completed).toBe(2)
    expect((await hangar('jobs', 'health', echo.id)).stdout).toMatch(/jobs completed:\s+2/)

    const workers = await json('endpoints', 'workers', echo.id)
    expect(workers.workers).toHaveLength(1)
    const workerId = workers.workers[0].id
    expect((await hangar('endpoints', 'workers', echo.id)).stdout).toContain(workerId)
    // Both jobs and the worker's cold start show in the metrics, as JSON and as a table of the busy minutes.
    expect((await json('endpoints', 'metrics', echo.id)).totals).toMatchObject({ completed: 2, coldStarts: 1 })
    const metrics = await hangar('endpoints', 'metrics', echo.id, '--window', 'day')
    expect(metrics.stdout).toMatch(/^completed:\s+2$/m)
    expect(metrics.stdout).toMatch(/^FROM\s+DONE\s+FAILED/m)
    const logs = await hangar('endpoints', 'logs', echo.id, workerId, '--source', 'system')
    expect(logs.code).toBe(0)
    expect(logs.stdout).toMatch(/^\S+ \[system\] /m)

    const stream = await json(
      'endpoints',
      'create',
      '--name',
      'stream',
      '--image',
      'hangar/stream',
      '--cpu',
      'cpu3c:2',
      '--max',
      '1',
      '--scaling',
      'QUEUE_DELAY:1',
    )
    const job = await json('jobs', 'run', stream.id, '--input', '{"count":3,"delayMs":50}')
    const streamed = await hangar('jobs', 'stream', stream.id, job.id)
    expect(streamed.code).toBe(0)
    expect(streamed.stdout).toBe('chunk 1\nchunk 2\nchunk 3\n')
  })

  it('jobs: a FAILED job exits 8 and can be retried; cancel and purge on a queue nothing takes', async () => {
    const fail = await json(
      'endpoints',
      'create',
      '--name',
      'fail',
      '--image',
      'hangar/fail',
      '--cpu',
      'cpu3c:2',
      '--max',
      '1',
      '--scaling',
      'QUEUE_DELAY:1',
    )
    const failed = await hangar(
      'jobs',
      'runsync',
      fail.id,
      '--input',
      '{"message":"boom"}',
      '--wait',
      '60000',
      '--json',
    )
    expect(failed.code).toBe(8)
    const view = JSON.parse(failed.stdout)
    expect(view).toMatchObject({ status: 'FAILED', error: expect.stringContaining('boom') })
    expect(await json('jobs', 'retry', fail.id, view.id)).toMatchObject({ id: view.id, status: 'IN_QUEUE' })

    const parked = await json(
      'endpoints',
      'create',
      '--name',
      'parked',
      '--image',
      'hangar/echo',
      '--cpu',
      'cpu3c:2',
      '--max',
      '0',
      '--scaling',
      'QUEUE_DELAY:1',
    )
    const a = await json('jobs', 'run', parked.id)
    await json('jobs', 'run', parked.id)
    await json('jobs', 'run', parked.id)
    const notDone = await hangar('jobs', 'runsync', parked.id, '--wait', '1000')
    expect(notDone.code).toBe(9)
    expect(await json('jobs', 'cancel', parked.id, a.id)).toEqual({ id: a.id, status: 'CANCELLED' })
    expect(await json('jobs', 'purge', parked.id)).toMatchObject({ removed: expect.any(Number) })
    expect((await json('jobs', 'health', parked.id)).jobs.inQueue).toBe(0)
    expect((await hangar('jobs', 'status', parked.id, 'no-such-job')).code).toBe(5)
  })

  it('templates: create, list (yours and the catalog), get, update, delete', async () => {
    const t = await json(
      'templates',
      'create',
      '--name',
      'my-tpl',
      '--image',
      'hangar/echo',
      '--serverless',
      '--category',
      'CPU',
      '--env',
      'X=y',
    )
    expect(t).toMatchObject({
      name: 'my-tpl',
      image: 'hangar/echo',
      serverless: true,
      category: 'CPU',
      env: { X: 'y' },
    })
    expect((await hangar('templates', 'list')).stdout).toMatch(
      new RegExp(`${t.id}\\s+my-tpl\\s+hangar/echo\\s+true\\s+false\\s+CPU`),
    )
    expect((await json('templates', 'list', '--catalog', 'official')).map((x: { id: string }) => x.id)).toContain(
      'hangar-echo',
    )
    expect(await json('templates', 'get', t.id)).toMatchObject({ id: t.id })
    expect(await json('templates', 'update', t.id, '--disk', '30')).toMatchObject({ disk: 30 })
    expect((await hangar('templates', 'delete', t.id)).code).toBe(0)
    expect((await hangar('templates', 'get', t.id)).code).toBe(5)
  })

  it('volumes: create, list, get, update, delete', async () => {
    const v = await json('volumes', 'create', '--name', 'models', '--size', '10', '--data-center', 'LOCAL-1')
    expect(v).toMatchObject({ name: 'models', size: 10, dataCenter: 'LOCAL-1', type: 'STANDARD' })
    expect((await hangar('volumes', 'list')).stdout).toMatch(
      new RegExp(`${v.id}\\s+models\\s+10\\s+LOCAL-1\\s+STANDARD`),
    )
    expect(await json('volumes', 'get', v.id)).toEqual(v)
    expect(await json('volumes', 'update', v.id, '--size', '20')).toMatchObject({ size: 20 })
    const shrink = await hangar('volumes', 'update', v.id, '--size', '10')
    expect(shrink.code).toBe(6)
    expect(shrink.stderr).toMatch(/^error: 400 /)
    expect((await hangar('volumes', 'delete', v.id)).code).toBe(0)
    expect(await json('volumes', 'list')).toEqual([])
  })

  it('registries: create with the password on stdin, list, get, delete', async () => {
    const r = await hangarIn(
      { HANGAR_URL: server.url, HANGAR_DATA_DIR: dataDir },
      ['registries', 'create', '--name', 'ghcr', '--username', 'me', '--password-stdin', '--json'],
      's3cret\n',
    )
    expect(r.code, r.stderr).toBe(0)
    const reg = JSON.parse(r.stdout)
    expect(reg).toEqual({ id: expect.any(String), name: 'ghcr' })
    expect((await hangar('registries', 'list')).stdout).toMatch(new RegExp(`${reg.id}\\s+ghcr`))
    expect(await json('registries', 'get', reg.id)).toEqual(reg)
    expect((await hangar('registries', 'delete', reg.id)).code).toBe(0)
    expect(await json('registries', 'list')).toEqual([])
  })

  it('ssh-keys: add (inline and @file), list, remove by comment', async () => {
    const keyFile = join(dir, 'id.pub')
    writeFileSync(keyFile, 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFile me@laptop\n')
    expect(await json('ssh-keys', 'add', 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIInline ci')).toEqual({
      keys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIInline ci'],
    })
    expect((await json('ssh-keys', 'add', `@${keyFile}`)).keys).toHaveLength(2)
    expect((await hangar('ssh-keys', 'list')).stdout).toBe(
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIInline ci\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFile me@laptop\n',
    )
    expect(await json('ssh-keys', 'remove', 'me@laptop')).toEqual({
      keys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIInline ci'],
    })
    expect((await hangar('ssh-keys', 'remove', 'nobody@nowhere')).code).toBe(5)
  })
})
