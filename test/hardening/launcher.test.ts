import { execFileSync } from 'node:child_process'
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { connect, createServer, type Server } from 'node:net'
import { networkInterfaces, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LABELS } from '../../src/runtime/labels.js'
import { ProcessDriver } from '../../src/runtime/process/ProcessDriver.js'
import { hostAddresses } from '../../src/runtime/process/network.js'
import { checkMountTarget, probeSandbox, type SandboxState } from '../../src/runtime/process/sandbox.js'
import type { Workload, WorkloadSpec } from '../../src/runtime/RuntimeDriver.js'
import { until } from '../helpers/until.js'

/**
 * Issue 34: what a tenant's data does to the processes Hangar starts outside a sandbox (the supervisor, its
 * watcher, bwrap, setpriv before the drop, pasta, nsenter), and what a sandboxed program reaches on the network.
 *
 * The attacker controls its env (names and values: PATH, LD_PRELOAD, LD_LIBRARY_PATH, ENV, BASH_ENV, IFS, HOME,
 * TMPDIR), its command, image name, mount paths and ports, and the files of its own volume. Every attack plants
 * a program of each name Hangar runs (and a preload library where a C compiler is at hand) in that volume, puts
 * the volume first in PATH (at its host path and at its path inside), then triggers a start, a restart and a
 * restart after a crash. A planted program that runs outside the sandbox writes into a marker directory no
 * sandbox can see; one that runs inside the sandbox before the drop reports uid 0 or capabilities in the volume.
 * The control runs take the protection away (the supervisor spawned with the workload's env, programs by name,
 * as before issue 34; the host's network) and show each attack succeed, so the assertions can fail.
 */
const root = process.getuid?.() === 0
const sandbox = probeSandbox({ sandbox: 'auto', bwrap: 'bwrap', network: 'internet', pasta: 'pasta' })
const PLANTED = [
  'bwrap',
  'sh',
  'dash',
  'setpriv',
  'sed',
  'cut',
  'cat',
  'sleep',
  'kill',
  'pasta',
  'passt',
  'nsenter',
  'ip',
  'env',
  'id',
  'ls',
]

const work = mkdtempSync(join(tmpdir(), 'hangar-launcher-'))
/** Outside every sandbox: a planted program that writes here ran on the host. */
const marker = join(work, 'marker')
const dataDir = join(work, 'data')

function cCompiler(): string | null {
  for (const cc of ['cc', 'gcc', 'clang']) {
    try {
      execFileSync(cc, ['--version'], { stdio: 'ignore' })
      return cc
    } catch {
      // not this one
    }
  }
  return null
}

/** The tenant's volume: planted programs in bin/, a preload library, and reports/ they write to. */
function plantVolume(volume: string): { preload: boolean } {
  mkdirSync(join(volume, 'bin'), { recursive: true })
  mkdirSync(join(volume, 'reports'), { recursive: true })
  chmodSync(volume, 0o777)
  chmodSync(join(volume, 'reports'), 0o777)
  for (const name of PLANTED) {
    const script = [
      '#!/bin/sh',
      `report="$(/usr/bin/id -u) $(/usr/bin/grep CapEff /proc/self/status | /usr/bin/tr -d '\\t')"`,
      `/usr/bin/mkdir -p ${marker} 2>/dev/null && echo "${name} $report" > ${marker}/${name}.$$ 2>/dev/null`,
      `for d in /runpod-volume ${volume}; do [ -d "$d/reports" ] && echo "${name} $report" > "$d/reports/${name}.$$" 2>/dev/null; done`,
      // Then do what the real one does, so the start goes on and every later step is attacked too.
      `for p in /usr/bin/${name} /bin/${name} /usr/sbin/${name} /sbin/${name}; do [ -x "$p" ] && exec "$p" "$@"; done`,
      'exit 127',
    ].join('\n')
    writeFileSync(join(volume, 'bin', name), `${script}\n`, { mode: 0o755 })
  }
  const cc = cCompiler()
  if (!cc) return { preload: false }
  const source = join(work, 'evil.c')
  writeFileSync(
    source,
    [
      '#include <stdio.h>',
      '#include <stdlib.h>',
      '#include <string.h>',
      '#include <unistd.h>',
      '__attribute__((constructor)) static void evil(void) {',
      '  char comm[64] = "", caps[128] = "", line[256];',
      '  FILE *f = fopen("/proc/self/comm", "r"); if (f) { if (fgets(comm, sizeof comm, f)) comm[strcspn(comm, "\\n")] = 0; fclose(f); }',
      '  f = fopen("/proc/self/status", "r"); if (f) { while (fgets(line, sizeof line, f)) if (!strncmp(line, "CapEff:", 7)) { strcpy(caps, line); caps[strcspn(caps, "\\n")] = 0; } fclose(f); }',
      `  const char *dirs[] = { "${marker}", "/runpod-volume/reports", "${volume}/reports" };`,
      '  for (int i = 0; i < 3; i++) { char p[512]; snprintf(p, sizeof p, "%s/preload-%s.%d", dirs[i], comm, getpid()); FILE *o = fopen(p, "w"); if (o) { fprintf(o, "preload:%s %d %s\\n", comm, getuid(), caps); fclose(o); } }',
      '}',
    ].join('\n'),
  )
  execFileSync(cc, ['-shared', '-fPIC', '-o', join(volume, 'evil.so'), source])
  chmodSync(join(volume, 'evil.so'), 0o755)
  return { preload: true }
}

/** What ran outside (the marker directory) and what ran privileged inside (reports of uid 0 or any capability). */
function findings(volume: string): { outside: string[]; privilegedInside: string[] } {
  const read = (dir: string) =>
    existsSync(dir) ? readdirSync(dir).map((f) => readFileSync(join(dir, f), 'utf8').replace(/\s+/g, ' ').trim()) : []
  const privileged = (r: string) => {
    const m = / (\d+) CapEff: ?([0-9a-f]+)/.exec(r)
    return m !== null && (m[1] === '0' || /[1-9a-f]/.test(m[2]))
  }
  return { outside: read(marker), privilegedInside: read(join(volume, 'reports')).filter(privileged) }
}

function clearFindings(volume: string): void {
  rmSync(marker, { recursive: true, force: true })
  rmSync(join(volume, 'reports'), { recursive: true, force: true })
  mkdirSync(join(volume, 'reports'), { recursive: true, mode: 0o777 })
  chmodSync(join(volume, 'reports'), 0o777)
}

function attackSpec(id: string, volume: string, command: string, over: Partial<WorkloadSpec> = {}): WorkloadSpec {
  const preload = `${volume}/evil.so:/runpod-volume/evil.so`
  return {
    id,
    kind: 'worker',
    hostId: 'local',
    labels: { [LABELS.account]: 'acc_mallory' },
    image: 'mallory/$(touch /tmp/pwned-image);`id`:latest',
    entrypoint: ['/bin/sh', '-c', command],
    cmd: [],
    env: {
      PATH: `/runpod-volume/bin:${volume}/bin:/usr/bin:/bin`,
      LD_PRELOAD: preload,
      LD_LIBRARY_PATH: volume,
      ENV: `${volume}/bin/env`,
      BASH_ENV: `${volume}/bin/env`,
      IFS: '/',
      HOME: volume,
      TMPDIR: volume,
      // The worker-protocol interval the supervisor's orphan watch is computed from (a worker's, so the watcher runs).
      RUNPOD_PING_INTERVAL: '200',
    },
    gpus: { ids: [], virtual: true },
    resources: { vcpus: 0, memoryGb: 0 },
    mounts: [
      { kind: 'disk', target: '/workspace', sizeGb: 1 },
      { kind: 'volume', source: volume, target: '/runpod-volume' },
    ],
    ports: [{ port: 8000, protocol: 'http', env: ['PORT'] }],
    ...over,
  }
}

/** Start, restart (stop, start again) and restart after a crash (the program exits 3, started again). */
async function startRestartCrash(driver: ProcessDriver, volume: string, id: string): Promise<string[]> {
  const lines: string[] = []
  const run = async (spec: WorkloadSpec, stop: boolean): Promise<void> => {
    const w: Workload = await driver.start(spec)
    if (stop) {
      await until(async () => w.logs.history().some((l) => l.line === 'up'), 20_000, 'the program up')
      await w.stop(5_000)
    }
    await w.exited
    lines.push(...w.logs.history().map((l) => l.line))
    await driver.remove(w.ref)
  }
  await run(attackSpec(id, volume, 'echo up; sleep 30'), true)
  await run(attackSpec(id, volume, 'echo up; sleep 30'), true)
  // The crash: out at once with an error, and the watcher has had its second to run.
  await run(attackSpec(id, volume, 'echo up; sleep 1.5; exit 3'), false)
  await run(attackSpec(id, volume, 'echo up; exit 3'), false)
  return lines
}

describe.skipIf(sandbox.kind !== 'bwrap')(
  "a tenant's env, command, image, mounts and files reach no process outside its sandbox",
  { timeout: 180_000 },
  () => {
    const volume = join(dataDir, 'volumes', 'LOCAL-1', 'vol_mallory')
    let preload = false
    beforeAll(() => {
      mkdirSync(volume, { recursive: true })
      preload = plantVolume(volume).preload
      if (!preload)
        console.log('the LD_PRELOAD attacks are skipped: no C compiler (cc, gcc, clang) to build the library')
    })
    afterAll(() => rmSync(work, { recursive: true, force: true }))

    it('control: with the launcher of before (the workload env outside, programs by name) the planted programs run as root on the host', async () => {
      const driver = new ProcessDriver({
        dataDir,
        images: {},
        hostEnv: { PATH: '/usr/bin:/bin' },
        sandbox,
        unsafeLaunchWithWorkloadEnv: true,
      })
      clearFindings(volume)
      await startRestartCrash(driver, volume, 'w-control').catch(() => undefined)
      const found = findings(volume)
      // The supervisor's shell found bwrap and the watcher's sed and cut through the tenant's PATH, on the host.
      expect(found.outside.some((r) => r.startsWith('bwrap '))).toBe(true)
      expect(found.outside.some((r) => /^(sed|cut|cat) /.test(r))).toBe(true)
      if (root) expect(found.outside.some((r) => /^bwrap 0 /.test(r))).toBe(true)
      if (preload) expect(found.outside.some((r) => r.startsWith('preload:'))).toBe(true)
    })

    it('with the fixed launcher: nothing planted runs outside, nothing runs privileged inside, the program still gets its env', async () => {
      const driver = new ProcessDriver({ dataDir, images: {}, hostEnv: { PATH: '/usr/bin:/bin' }, sandbox })
      clearFindings(volume)
      const lines = await startRestartCrash(driver, volume, 'w-attack')
      expect(lines.filter((l) => l === 'up')).toHaveLength(4)
      const found = findings(volume)
      expect(found.outside).toEqual([])
      expect(found.privilegedInside).toEqual([])
      // The tenant's own program did run the planted programs, in the sandbox and unprivileged: the env reached it.
      expect(readdirSync(join(volume, 'reports')).some((f) => f.startsWith('sleep.'))).toBe(true)
      if (preload) expect(readdirSync(join(volume, 'reports')).some((f) => f.startsWith('preload-'))).toBe(true)
      expect(existsSync('/tmp/pwned-image')).toBe(false)
    })

    it('refuses mount paths that would cover the sandbox itself, and env names no process can carry, before starting anything', async () => {
      const driver = new ProcessDriver({ dataDir, images: {}, hostEnv: { PATH: '/usr/bin:/bin' }, sandbox })
      for (const target of ['/usr/bin', '/bin', '/etc', '/', '/run', '/proc/x', '/workspace/../usr', '/lib64/x']) {
        const spec = attackSpec('w-mount', volume, 'echo up', { mounts: [{ kind: 'volume', source: volume, target }] })
        await expect(driver.start(spec), target).rejects.toThrow(/mount path/)
      }
      await expect(
        driver.start(
          attackSpec('w-nest', volume, 'echo up', {
            mounts: [
              { kind: 'volume', source: volume, target: '/data' },
              { kind: 'persistent', name: 'p', target: '/data/inner', sizeGb: 1 },
            ],
          }),
        ),
      ).rejects.toThrow(/lies inside \/data/)
      await expect(
        driver.start(attackSpec('w-env', volume, 'echo up', { env: { 'A=B; touch /tmp/x': '1' } })),
      ).rejects.toThrow(/cannot be set for a local process/)
      // A mount holding the program's files (Hangar's own dist, bound read-only): bwrap would make their mount
      // points inside the tenant's volume, following the links it left there.
      const holder = dirname(process.cwd())
      if (holder !== '/' && checkMountTarget(holder) === null) {
        await expect(
          driver.start(
            attackSpec('w-hold', volume, 'echo up', { mounts: [{ kind: 'volume', source: volume, target: holder }] }),
          ),
        ).rejects.toThrow(/which the sandbox shows read-only/)
      }
      expect(findings(volume).outside).toEqual([])
    })

    it("bounds the supervisor's orphan limit whatever the worker's env says (a huge ping interval or orphan timeout)", async () => {
      const driver = new ProcessDriver({ dataDir, images: {}, hostEnv: { PATH: '/usr/bin:/bin' }, sandbox })
      const envs: Record<string, string>[] = [
        { RUNPOD_PING_INTERVAL: '1e308' },
        { HANGAR_ORPHAN_TIMEOUT_MS: '1e300' },
        { RUNPOD_PING_INTERVAL: 'NaN' },
      ]
      for (const env of envs) {
        const w = await driver.start(attackSpec('w-orphan', volume, 'echo up; sleep 5', { env }))
        const args = readFileSync(`/proc/${w.ref.split(':')[2]}/cmdline`, 'utf8').split('\0')
        // sh -c SCRIPT NAME planes pid start LIMIT ...
        const limit = Number(args[7])
        expect(Number.isInteger(limit) && limit > 0 && limit <= 86_400, `${JSON.stringify(env)}: ${args[7]}`).toBe(true)
        await w.stop(0)
        await driver.remove(w.ref)
      }
    })

    it('passes argv-looking commands and quoted values through as data: bwrap options after -- are the program, a value is never code', async () => {
      const driver = new ProcessDriver({ dataDir, images: {}, hostEnv: { PATH: '/usr/bin:/bin' }, sandbox })
      clearFindings(volume)
      const value = `'; /usr/bin/touch ${marker}/quoted; echo '$(touch ${marker}/subst)\`touch ${marker}/tick\``
      const w = await driver.start(attackSpec('w-argv', volume, 'printf "%s\\n" "$TRICKY"', { env: { TRICKY: value } }))
      await w.exited
      expect(w.logs.history().map((l) => l.line)).toContain(value)
      await driver.remove(w.ref)
      const bound = await driver.start(
        attackSpec('w-opts', volume, '', {
          entrypoint: ['--bind', '/', '/host', '/bin/sh', '-c', 'ls /host/etc/shadow && echo ESCAPED'],
        }),
      )
      await bound.exited
      expect(bound.logs.history().map((l) => l.line)).not.toContain('ESCAPED')
      await driver.remove(bound.ref)
      expect(findings(volume).outside).toEqual([])
    })
  },
)

/** A TCP listener on the host that says "reached" to whoever connects. */
function listen(host: string, port = 0): Promise<Server & { port: number }> {
  return new Promise((resolve, reject) => {
    // A prober that gives up resets its connection: nothing to report.
    const s = createServer((c) => c.on('error', () => undefined).end('reached\n'))
    s.once('error', reject)
    s.listen(port, host, () => resolve(Object.assign(s, { port: (s.address() as { port: number }).port })))
  })
}

function hostAddress(): string | null {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (!a.internal && a.family === 'IPv4') return a.address
  return null
}

/** A program (node, bound read-only into every sandbox) that tries each target and prints `<name> open|closed`. */
function probeProgram(targets: Record<string, string>): string[] {
  const code = `const net=require('net');const t=${JSON.stringify(targets)};let left=Object.keys(t).length;for(const [n,a] of Object.entries(t)){const [h,p]=a.split(' ');const s=net.connect({host:h,port:+p});const done=(r)=>{if(s.done)return;s.done=1;console.log(n+' '+r);s.destroy();if(--left===0)process.exit(0)};s.setTimeout(2000,()=>done('closed'));s.on('data',()=>done('open'));s.on('connect',()=>setTimeout(()=>done('open'),300));s.on('error',()=>done('closed'))}`
  return [process.execPath, '-e', code]
}

describe.skipIf(sandbox.kind !== 'bwrap' || (sandbox.kind === 'bwrap' && sandbox.network.mode === 'host'))(
  'what a sandboxed program reaches on the network',
  { timeout: 120_000 },
  () => {
    const servers: Server[] = []
    const workloads: { driver: ProcessDriver; w: Workload }[] = []
    let loopback: Server & { port: number }
    let controlPlane: Server & { port: number }
    let anyAddress: Server & { port: number }
    let loopback6: (Server & { port: number }) | null = null
    /** Another service on the control plane's port number, at the host's IPv6 loopback (not the URL's address). */
    let besideControlPlane: (Server & { port: number }) | null = null
    beforeAll(async () => {
      mkdirSync(dataDir, { recursive: true })
      loopback = await listen('127.0.0.1')
      controlPlane = await listen('127.0.0.1')
      anyAddress = await listen('0.0.0.0')
      servers.push(loopback, controlPlane, anyAddress)
      try {
        loopback6 = await listen('::1')
        besideControlPlane = await listen('::1', controlPlane.port)
        servers.push(loopback6, besideControlPlane)
      } catch {
        // No IPv6 loopback on this host: those targets are not probed.
      }
    })
    afterAll(async () => {
      for (const { driver, w } of workloads) {
        await w.stop(0)
        await w.exited
        await driver.remove(w.ref)
      }
      for (const s of servers) s.close()
    })

    async function reach(state: SandboxState, neighbour: number): Promise<Record<string, string>> {
      const driver = new ProcessDriver({ dataDir, images: {}, hostEnv: { PATH: '/usr/bin:/bin' }, sandbox: state })
      const address = hostAddress()
      const targets: Record<string, string> = {
        'host loopback (random port)': `127.0.0.1 ${loopback.port}`,
        'host loopback (Redis 6379)': '127.0.0.1 6379',
        'host loopback (PostgreSQL 5432)': '127.0.0.1 5432',
        "another tenant's pod port": `127.0.0.1 ${neighbour}`,
        'control plane (worker URL)': `127.0.0.1 ${controlPlane.port}`,
        ...(loopback6 ? { 'host IPv6 loopback (random port)': `::1 ${loopback6.port}` } : {}),
        ...(besideControlPlane
          ? { "another service on the control plane's port, at ::1": `::1 ${besideControlPlane.port}` }
          : {}),
        ...(address ? { "the host's own address": `${address} ${anyAddress.port}` } : {}),
      }
      const [program, ...args] = probeProgram(targets)
      const spec: WorkloadSpec = {
        id: `w-net-${state.kind === 'bwrap' ? state.network.mode : 'none'}`,
        kind: 'worker',
        hostId: 'local',
        labels: { [LABELS.account]: 'acc_mallory', [LABELS.controlPlane]: `http://127.0.0.1:${controlPlane.port}` },
        image: 'any',
        entrypoint: [program],
        cmd: args,
        env: {},
        gpus: { ids: [], virtual: true },
        resources: { vcpus: 0, memoryGb: 0 },
        mounts: [{ kind: 'disk', target: '/workspace', sizeGb: 1 }],
        ports: [],
      }
      const w = await driver.start(spec)
      await w.exited
      await driver.remove(w.ref)
      const out: Record<string, string> = {}
      for (const l of w.logs.history()) {
        const m = /^(.*) (open|closed)$/.exec(l.line)
        if (m) out[m[1]] = m[2]
      }
      expect(Object.keys(out).sort()).toEqual(Object.keys(targets).sort())
      return out
    }

    /** Another tenant's pod: listening on its declared port, published on the host's loopback. */
    async function neighbour(state: SandboxState): Promise<number> {
      const driver = new ProcessDriver({ dataDir, images: {}, hostEnv: { PATH: '/usr/bin:/bin' }, sandbox: state })
      const code =
        "require('net').createServer((c)=>c.end('pod\\n')).listen(+process.env.PORT,()=>console.log('listening'))"
      const w = await driver.start({
        id: `p-neighbour-${state.kind === 'bwrap' ? state.network.mode : 'none'}`,
        kind: 'pod',
        hostId: 'local',
        labels: { [LABELS.account]: 'acc_alice' },
        image: 'any',
        entrypoint: [process.execPath, '-e', code],
        cmd: [],
        env: {},
        gpus: { ids: [], virtual: true },
        resources: { vcpus: 0, memoryGb: 0 },
        mounts: [{ kind: 'disk', target: '/workspace', sizeGb: 1 }],
        ports: [{ port: 8080, protocol: 'tcp', env: ['PORT'] }],
      })
      workloads.push({ driver, w })
      await until(
        async () => w.logs.history().some((l) => l.line === 'listening'),
        20_000,
        'the neighbour pod listening',
      )
      // Through Hangar (the published port on the host's loopback) it answers.
      const published = w.ports[0].publicPort
      const answer = await new Promise<string>((resolve, reject) => {
        const c = connect(published, '127.0.0.1')
        let got = ''
        c.on('data', (d: Buffer) => {
          got += d
        })
        c.on('end', () => resolve(got))
        c.on('error', reject)
      })
      expect(answer).toBe('pod\n')
      return published
    }

    it('control: on the host network the program reaches every loopback service, the neighbour and the host', async () => {
      const hostState: SandboxState = {
        ...(sandbox as Extract<SandboxState, { kind: 'bwrap' }>),
        network: { mode: 'host' },
      }
      const out = await reach(hostState, await neighbour(hostState))
      expect(out['host loopback (random port)']).toBe('open')
      expect(out["another tenant's pod port"]).toBe('open')
      expect(out['control plane (worker URL)']).toBe('open')
      if (out["the host's own address"]) expect(out["the host's own address"]).toBe('open')
      if (loopback6) expect(out['host IPv6 loopback (random port)']).toBe('open')
      if (besideControlPlane) expect(out["another service on the control plane's port, at ::1"]).toBe('open')
    })

    it('blackholes every address of the host, link-local ones included, and IPv4 link-local (cloud metadata)', () => {
      const routes = hostAddresses()
      expect(routes).toContain('169.254.0.0/16')
      for (const list of Object.values(networkInterfaces()))
        for (const a of list ?? [])
          if (!a.internal) expect(routes).toContain(`${a.address}/${a.family === 'IPv6' ? 128 : 32}`)
    })

    it('in its own network (the default): only the control plane, nothing else of the host, not the neighbour', async () => {
      const out = await reach(sandbox, await neighbour(sandbox))
      expect(out).toMatchObject({
        'host loopback (random port)': 'closed',
        'host loopback (Redis 6379)': 'closed',
        'host loopback (PostgreSQL 5432)': 'closed',
        "another tenant's pod port": 'closed',
        'control plane (worker URL)': 'open',
      })
      if (out["the host's own address"]) expect(out["the host's own address"]).toBe('closed')
      if (loopback6) expect(out['host IPv6 loopback (random port)']).toBe('closed')
      // The link reaches the control plane's address and port as its URL names them, nothing beside it.
      if (besideControlPlane) expect(out["another service on the control plane's port, at ::1"]).toBe('closed')
    })
  },
)
