import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import pino from 'pino'
import { afterAll, describe, expect, it } from 'vitest'
import { gpuDevices, probeSandbox, programPaths, sandboxArgv } from '../../src/runtime/process/sandbox.js'
import { createEndpoint, endpointBody, jobCall } from '../helpers/endpoints.js'
import { createPod, podBody, waitPod } from '../helpers/pods.js'
import { spawnServe, type ServeProcess } from '../helpers/process.js'
import { startTestServer, type TestServer } from '../helpers/server.js'
import { until } from '../helpers/until.js'

/**
 * Issue 27, item 1: an ordinary account's program tries to read the control plane's secrets (its environment,
 * the sealing key, the database, the admin key), another account's volume, and escapes through `../` and a
 * symlink in its volume. With the sandbox it finds nothing; the control run (no sandbox, tenants trusted) shows
 * that the same assertions do see every one of those secrets when nothing stops the program.
 */
const sandbox = probeSandbox({ sandbox: 'auto', bwrap: 'bwrap' })
const METRICS_TOKEN = 'metrics-token-must-not-leak-7f3e1a'
const OTHER_MARKER = 'another-accounts-volume-content-91c4'

const ATTACK = [
  'cd "$HANGAR_DISK_PATH"',
  'echo "--environ"; for f in /proc/$PPID/environ /proc/1/environ /proc/[0-9]*/environ; do { tr "\\0" "\\n" < "$f"; } 2>/dev/null | grep "^HANGAR_METRICS"; done',
  'echo "--relative"; base64 -w0 ../../../secret.key; echo; head -c 15 ../../../hangar.db; echo; cat ../../../admin-key',
  'echo "--absolute"; base64 -w0 "$DATA/secret.key"; echo; head -c 15 "$DATA/hangar.db"; echo; cat "$DATA/admin-key"',
  'echo "--symlink"; if [ -n "$HANGAR_VOLUME_PATH" ]; then ln -sf "$DATA/secret.key" "$HANGAR_VOLUME_PATH/key-link"; base64 -w0 "$HANGAR_VOLUME_PATH/key-link"; echo; ln -sf "$DATA/admin-key" "$HANGAR_VOLUME_PATH/admin-link"; cat "$HANGAR_VOLUME_PATH/admin-link"; fi',
  'echo "--other-volume"; cat "$OTHER/marker.txt"; ls "$DATA/volumes"',
  'echo "processes=$(ls /proc | grep -c "^[0-9]")"',
  'echo ATTACK-DONE',
].join('\n')

interface Run {
  log: string
  secrets: Record<string, string>
}

async function api(
  url: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const r = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  const text = await r.text()
  return { status: r.status, body: text ? JSON.parse(text) : null }
}

/** Logs of every worker and pod of a data dir, as the logs API serves them. */
function allLogs(dataDir: string): string {
  let out = ''
  for (const kind of ['workers', 'pods']) {
    let ids: string[] = []
    try {
      ids = readdirSync(join(dataDir, kind))
    } catch {
      continue
    }
    for (const id of ids) {
      try {
        out += readFileSync(join(dataDir, kind, id, 'worker.log'), 'utf8')
      } catch {
        // not started yet
      }
    }
  }
  return out
}

/** Starts `hangar serve` with `runtime`, runs the attack as account mallory in a worker and in a pod, and returns what they printed. */
async function attack(runtime: Record<string, unknown>, dirs: string[], procs: ServeProcess[]): Promise<Run> {
  const parent = mkdtempSync(join(tmpdir(), 'hangar-sandbox-'))
  dirs.push(parent)
  const dataDir = join(parent, 'data')
  const configFile = join(parent, 'config.json')
  writeFileSync(
    configFile,
    JSON.stringify({ fleet: { detectGpus: false }, jobs: { pingIntervalMs: 500 }, runtime: { process: runtime } }),
  )
  const serve = await spawnServe(dataDir, { HANGAR_CONFIG: configFile, HANGAR_METRICS_TOKEN: METRICS_TOKEN })
  procs.push(serve)
  const admin = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()
  const keyOf = async (name: string) => {
    expect((await api(serve.url, admin, 'POST', '/v2/admin/accounts', { name })).status).toBe(201)
    return (await api(serve.url, admin, 'POST', '/v2/admin/keys', { account: name, permission: 'ALL' })).body
      .key as string
  }
  const mallory = await keyOf('mallory')
  const alice = await keyOf('alice')
  // Alice's volume, with something in it mallory must not read.
  const other = await api(serve.url, alice, 'POST', '/v2/network-volumes', {
    name: 'private',
    size: 10,
    dataCenter: 'LOCAL-1',
  })
  expect(other.status).toBe(201)
  const otherDir = join(dataDir, 'volumes', other.body.dataCenter, other.body.id)
  writeFileSync(join(otherDir, 'marker.txt'), OTHER_MARKER)
  const own = await api(serve.url, mallory, 'POST', '/v2/network-volumes', {
    name: 'mine',
    size: 10,
    dataCenter: 'LOCAL-1',
  })
  expect(own.status).toBe(201)
  const env = { DATA: dataDir, OTHER: otherDir }
  const ep = await api(serve.url, mallory, 'POST', '/v2/serverless', {
    name: 'attack',
    type: 'QUEUE',
    image: 'hangar/echo:latest',
    entrypoint: ['sh', '-c', ATTACK],
    env,
    cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
    scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
    workers: { min: 1, max: 1, idleTimeout: 60 },
    networkVolumes: [own.body.id],
  })
  expect(ep.status, JSON.stringify(ep.body)).toBe(201)
  const pod = await api(serve.url, mallory, 'POST', '/v2/pods', {
    name: 'attack',
    image: 'hangar/pod:latest',
    entrypoint: ['sh', '-c', ATTACK],
    env,
    cpu: { id: 'cpu3c', vcpuCount: 2 },
  })
  expect(pod.status, JSON.stringify(pod.body)).toBe(201)
  const log = await until(
    async () => {
      const text = allLogs(dataDir)
      return (text.match(/container ATTACK-DONE/g) ?? []).length >= 2 ? text : undefined
    },
    30_000,
    'the attack of the worker and of the pod',
  )
  const secretKey = readFileSync(join(dataDir, 'secret.key'))
  return {
    log,
    secrets: {
      'the metrics token in the control plane environment': METRICS_TOKEN,
      'the sealing key': secretKey.toString('base64').slice(0, 24),
      'the database': 'SQLite format 3',
      'the admin key': admin,
      "another account's volume": OTHER_MARKER,
    },
  }
}

describe.skipIf(sandbox.kind !== 'bwrap')(
  'tenants on the process runtime cannot read the control plane or each other',
  { timeout: 120_000 },
  () => {
    const dirs: string[] = []
    const procs: ServeProcess[] = []
    afterAll(async () => {
      for (const p of procs) {
        p.child.kill('SIGTERM')
        await p.exited
      }
      for (const d of dirs) rmSync(d, { recursive: true, force: true })
    })

    it('control: without a sandbox (tenants trusted) the attack finds every secret, so the assertions below can fail', async () => {
      const run = await attack({ sandbox: 'off', trustTenants: true }, dirs, procs)
      for (const [what, secret] of Object.entries(run.secrets)) expect(run.log.includes(secret), what).toBe(true)
    })

    it('sandboxed (the default): a worker and a pod of an ordinary account find none of them, and see no host process', async () => {
      const run = await attack({}, dirs, procs)
      expect(run.log).toContain('sandboxed (bubblewrap)')
      for (const [what, secret] of Object.entries(run.secrets)) expect(run.log.includes(secret), what).toBe(false)
      // Only the sandbox's own processes (its init, the shell, the command substitution's ls and grep).
      for (const m of run.log.matchAll(/processes=(\d+)/g)) expect(Number(m[1])).toBeLessThan(8)
    })
  },
)

if (sandbox.kind !== 'bwrap') console.log(`tenant isolation tests skipped: ${sandbox.reason}`)

describe('where the sandbox cannot run', { timeout: 60_000 }, () => {
  const servers: TestServer[] = []
  afterAll(async () => {
    for (const s of servers) await s.stop()
  })
  const start = async (processRuntime: Record<string, unknown>, lines: string[] = []) => {
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk))
        cb()
      },
    })
    const s = await startTestServer(
      { jobs: { pingIntervalMs: 500 }, runtime: { process: processRuntime } },
      { logger: pino({ level: 'warn' }, sink) },
    )
    servers.push(s)
    return s
  }

  it("says so at start, runs the admin's workloads and refuses other accounts' with the reason", async () => {
    const lines: string[] = []
    const s = await start({ bwrap: '/no/such/bwrap' }, lines)
    const warning = lines.map((l) => JSON.parse(l)).find((l) => /without a sandbox/.test(l.msg))
    expect(warning).toMatchObject({ level: 40, reason: expect.stringContaining('/no/such/bwrap') })
    expect(warning.msg).toMatch(/only the admin account's run on this host/)

    const own = await createEndpoint(s, endpointBody('hangar/echo:latest'))
    expect((await jobCall(s, 'POST', `/v2/${own.id}/runsync?wait=30000`, { input: { a: 1 } })).body).toMatchObject({
      status: 'COMPLETED',
    })

    const mallory = await s.accountKey('mallory')
    const theirs = await createEndpoint(s, endpointBody('hangar/echo:latest'), mallory)
    await jobCall(s, 'POST', `/v2/${theirs.id}/run`, { input: {} }, { key: mallory })
    const failed = await until(
      async () => (await s.hangar.store.workers.listRecent(theirs.id, 1)).find((w) => w.lastError),
      15_000,
      "the refused worker's error",
    )
    expect(failed.lastError).toMatch(
      /^this host runs local processes without a sandbox \(cannot run "\/no\/such\/bwrap": .*\), so only the admin account's workers run here, not those of account acc_\w+: install bubblewrap \(bwrap\) with user namespaces allowed, or set runtime.process.trustTenants to true/,
    )

    const pod = await createPod(s, podBody(), mallory)
    await waitPod(s, pod.id, 'ERROR', mallory)
    expect((await s.hangar.store.pods.get(pod.id))?.lastError).toMatch(
      /without a sandbox .* only the admin account's pods run here/,
    )
  })

  it("runs every account's workloads when the operator trusts the tenants (runtime.process.trustTenants)", async () => {
    const s = await start({ bwrap: '/no/such/bwrap', trustTenants: true })
    const mallory = await s.accountKey('mallory')
    const theirs = await createEndpoint(s, endpointBody('hangar/echo:latest'), mallory)
    expect(
      (await jobCall(s, 'POST', `/v2/${theirs.id}/runsync?wait=30000`, { input: { a: 1 } }, { key: mallory })).body,
    ).toMatchObject({ status: 'COMPLETED', output: { a: 1 } })
  })

  it('refuses to start when the sandbox is required (runtime.process.sandbox "bwrap") but cannot run', async () => {
    await expect(start({ sandbox: 'bwrap', bwrap: '/no/such/bwrap' })).rejects.toThrow(
      /runtime.process.sandbox is "bwrap" but the sandbox cannot run: cannot run "\/no\/such\/bwrap"/,
    )
  })
})

describe('what a sandbox shows of the host', () => {
  const root = mkdtempSync(join(tmpdir(), 'hangar-sandbox-paths-'))
  afterAll(() => rmSync(root, { recursive: true, force: true }))

  it("binds an images entry's script with its directory and its env path lists, never the data dir or what holds it", () => {
    const dataDir = join(root, 'data')
    for (const d of ['data/volumes', 'app/lib', 'sdk', 'shims']) mkdirSync(join(root, d), { recursive: true })
    writeFileSync(join(root, 'app', 'handler.py'), '')
    writeFileSync(join(root, 'top.py'), '')
    const paths = programPaths(
      {
        command: ['python3', '-u', join(root, 'app', 'handler.py'), join(root, 'top.py'), join(dataDir, 'volumes')],
        env: { PYTHONPATH: `${join(root, 'sdk')}:${join(root, 'shims')}:relative:/no/such/dir`, NODE_PATH: root },
      },
      dataDir,
    )
    expect(paths).toEqual(
      expect.arrayContaining([join(root, 'app'), join(root, 'sdk'), join(root, 'shims'), join(root, 'top.py')]),
    )
    // `root` holds the data dir (so does top.py's directory): neither is shown, nor anything inside the data dir.
    expect(paths).not.toContain(root)
    expect(paths.filter((p) => p.startsWith(dataDir))).toEqual([])
    // A path inside another one is not bound twice.
    expect(paths).not.toContain(join(root, 'app', 'handler.py'))
  })

  it("gives a GPU workload the device nodes of its own GPUs (by the driver's minor numbers) and /sys, not another's", () => {
    const dev = join(root, 'dev')
    const proc = join(root, 'gpus')
    mkdirSync(dev, { recursive: true })
    for (const n of ['nvidia0', 'nvidia1', 'nvidia2', 'nvidia3', 'nvidiactl', 'nvidia-uvm', 'null'])
      writeFileSync(join(dev, n), '')
    // Index 0 is the lowest bus id; its minor is 2, index 1's is 0 (minors need not follow indices).
    for (const [bus, minor] of [
      ['0000:3b:00.0', 2],
      ['0000:af:00.0', 0],
      ['0000:d8:00.0', 3],
    ] as const) {
      mkdirSync(join(proc, bus), { recursive: true })
      writeFileSync(join(proc, bus, 'information'), `Model: NVIDIA L4\nDevice Minor: ${minor}\n`)
    }
    expect(gpuDevices(['0'], proc, dev)).toEqual([
      join(dev, 'nvidia2'),
      join(dev, 'nvidiactl'),
      join(dev, 'nvidia-uvm'),
    ])
    expect(gpuDevices(['1', '2'], proc, dev)).toEqual([
      join(dev, 'nvidia0'),
      join(dev, 'nvidia3'),
      join(dev, 'nvidiactl'),
      join(dev, 'nvidia-uvm'),
    ])
    // Without driver information the index is the minor.
    expect(gpuDevices(['1'], join(root, 'none'), dev)).toEqual([
      join(dev, 'nvidia1'),
      join(dev, 'nvidiactl'),
      join(dev, 'nvidia-uvm'),
    ])
    const state = {
      kind: 'bwrap' as const,
      bwrap: '/usr/bin/bwrap',
      setpriv: '/usr/bin/setpriv',
      network: { mode: 'host' as const },
    }
    const gpu = sandboxArgv(state, [], '/', ['true'], { gpus: ['0'] }).join(' ')
    for (const d of gpuDevices(['0'])) expect(gpu).toContain(`--dev-bind ${d} ${d}`)
    expect(gpu).toContain('--ro-bind-try /sys /sys')
    const cpu = sandboxArgv(state, [], '/', ['true']).join(' ')
    expect(cpu).not.toContain('/sys')
    expect(cpu).not.toContain('nvidia')
  })
})
