import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, request, type Server } from 'node:http'
import { connect, createServer as createTcpServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LABELS } from '../../src/runtime/labels.js'
import { ProcessDriver } from '../../src/runtime/process/ProcessDriver.js'
import { FORWARDER_NAME, RELAY_MAX_CONNECTIONS } from '../../src/runtime/process/forwarder.js'
import { probeSandbox, SANDBOX_UID } from '../../src/runtime/process/sandbox.js'
import type { Workload, WorkloadSpec } from '../../src/runtime/RuntimeDriver.js'
import { until } from '../helpers/until.js'

/**
 * The link between a sandboxed program and the control plane's port (as root: Hangar's forwarder, not pasta's
 * `-T`, whose Debian build of 2023-03 stalls for good on big bodies going from the namespace to the host). Big
 * bodies must get through whole, and the forwarder, which runs outside the sandbox, must carry nothing of the
 * tenant's but the bytes of its connections and must not outlive the sandbox.
 */
const sandbox = probeSandbox({ sandbox: 'auto', bwrap: 'bwrap', network: 'internet', pasta: 'pasta' })
const asRoot = process.getuid?.() === 0
const work = mkdtempSync(join(tmpdir(), 'hangar-link-'))
const dataDir = join(work, 'data')

const CALLS = 8
const BYTES = 20_000_000

/** A sandboxed program: CALLS POSTs of BYTES at once to the control plane, each printing what came back. */
function bigCalls(port: number): string[] {
  const code = `const http=require('http');const body=Buffer.alloc(${BYTES},7);let left=${CALLS}
setTimeout(()=>{console.log('gave up');process.exit(1)},90000).unref()
for(let i=0;i<${CALLS};i++){const q=http.request({host:'127.0.0.1',port:${port},method:'POST',path:'/'+i,agent:false,headers:{'content-length':${BYTES}}},(r)=>{let n=0;r.on('data',(c)=>{n+=c.length});r.on('end',()=>{console.log('call '+i+' got '+n);if(--left===0)process.exit(0)})});q.on('error',(e)=>console.log('call '+i+' failed: '+e.message));q.end(body)}`
  return [process.execPath, '-e', code]
}

function spec(id: string, controlPlane: number, command: string[], env: Record<string, string> = {}): WorkloadSpec {
  return {
    id,
    kind: 'worker',
    hostId: 'local',
    labels: { [LABELS.account]: 'acc_mallory', [LABELS.controlPlane]: `http://127.0.0.1:${controlPlane}` },
    image: 'any',
    entrypoint: command,
    cmd: [],
    env,
    gpus: { ids: [], virtual: true },
    resources: { vcpus: 0, memoryGb: 0 },
    mounts: [{ kind: 'disk', target: '/workspace', sizeGb: 1 }],
    ports: [],
  }
}

describe.skipIf(sandbox.kind !== 'bwrap' || (sandbox.kind === 'bwrap' && sandbox.network.mode === 'host'))(
  "a sandbox's link to the control plane",
  { timeout: 180_000 },
  () => {
    /** Bytes each call brought, by path. */
    const received = new Map<string, number>()
    let server: Server
    let port = 0
    const driver = () => new ProcessDriver({ dataDir, images: {}, hostEnv: { PATH: '/usr/bin:/bin' }, sandbox })
    /** Stops a workload at once and removes what it left. */
    const end = async (d: ProcessDriver, w: Workload) => {
      await w.stop(0)
      await w.exited
      await d.remove(w.ref)
    }
    beforeAll(async () => {
      mkdirSync(dataDir, { recursive: true })
      const reply = Buffer.alloc(BYTES, 9)
      // The control plane's stand-in: reads each body whole, then answers with as many bytes.
      server = createServer((req, res) => {
        let n = 0
        req.on('data', (c: Buffer) => {
          n += c.length
        })
        req.on('end', () => {
          received.set(req.url ?? '', n)
          res.setHeader('content-length', reply.length)
          res.end(reply)
        })
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      port = (server.address() as { port: number }).port
    })
    afterAll(() => {
      server.close()
      rmSync(work, { recursive: true, force: true })
    })

    it(`carries ${CALLS} calls of ${BYTES / 1e6} MB each way at once, every byte (pasta's -T stalls on them)`, async () => {
      const d = driver()
      const w = await d.start(spec('w-big-bodies', port, bigCalls(port)))
      await w.exited
      await d.remove(w.ref)
      const lines = w.logs.history().map((l) => l.line)
      const got = lines.filter((l) => /^call \d+ /.test(l)).sort()
      expect(got, lines.slice(-20).join('\n')).toEqual(
        Array.from({ length: CALLS }, (_, i) => `call ${i} got ${BYTES}`).sort(),
      )
      for (let i = 0; i < CALLS; i++) expect(received.get(`/${i}`)).toBe(BYTES)
    })

    it(`publishes a pod's port that takes ${CALLS} calls of ${BYTES / 1e6} MB each way at once from the host, every byte (pasta's -t stalls on them)`, async () => {
      const d = driver()
      const code = `const b=Buffer.alloc(${BYTES},5);require('http').createServer((q,r)=>{let n=0;q.on('data',(c)=>{n+=c.length});q.on('end',()=>{console.log('got '+n);r.setHeader('content-length',b.length);r.end(b)})}).listen(+process.env.PORT,()=>console.log('listening'))`
      const w = await d.start({
        ...spec('p-big-bodies', port, [process.execPath, '-e', code]),
        kind: 'pod',
        ports: [{ port: 8080, protocol: 'http', env: ['PORT'] }],
      })
      try {
        await until(async () => w.logs.history().some((l) => l.line === 'listening'), 20_000, 'the pod listening')
        const body = Buffer.alloc(BYTES, 3)
        const answers = await Promise.all(
          Array.from(
            { length: CALLS },
            () =>
              new Promise<number>((resolve) => {
                const q = request(
                  { host: '127.0.0.1', port: w.ports[0].publicPort, method: 'POST', agent: false, timeout: 90_000 },
                  (r) => {
                    let n = 0
                    r.on('data', (c: Buffer) => {
                      n += c.length
                    })
                    r.on('end', () => resolve(n))
                    r.on('error', () => resolve(n))
                  },
                )
                // A stalled call times out and reports what it had (nothing), rather than hang the test.
                q.on('timeout', () => q.destroy(new Error('stalled')))
                q.on('error', () => resolve(-1))
                q.end(body)
              }),
          ),
        )
        expect(answers).toEqual(Array.from({ length: CALLS }, () => BYTES))
        expect(w.logs.history().filter((l) => l.line === `got ${BYTES}`)).toHaveLength(CALLS)
        if (asRoot) {
          // The relay in the namespace, like the forwarder: the sandbox user, no capabilities.
          const relay = Number.parseInt(readFileSync(join(dataDir, 'pods', 'p-big-bodies', 'publish.pid'), 'utf8'), 10)
          const status = readFileSync(`/proc/${relay}/status`, 'utf8')
          expect(status).toMatch(new RegExp(`^Uid:\\s+${SANDBOX_UID}\\s`, 'm'))
          expect(status).toMatch(/^CapEff:\s+0+$/m)
        }
      } finally {
        await end(d, w)
      }
    })

    it.skipIf(!asRoot)(
      `carries at most ${RELAY_MAX_CONNECTIONS} of a sandbox's connections at once to the control plane (a flood would spend its descriptors), and more once they close`,
      async () => {
        const FLOOD = 3 * RELAY_MAX_CONNECTIONS
        // The control plane's stand-in: says hi on every connection and counts those open.
        const open = new Set<Socket>()
        let most = 0
        const plane = createTcpServer((s) => {
          open.add(s)
          most = Math.max(most, open.size)
          s.on('error', () => undefined)
          s.on('close', () => open.delete(s))
          s.write('hi')
        })
        await new Promise<void>((resolve) => plane.listen(0, '127.0.0.1', resolve))
        const planePort = (plane.address() as { port: number }).port
        // FLOOD connections held open; once every one has been answered or closed, all are closed and one more
        // is opened, which must be carried.
        const code = `const net=require('net');let greeted=0,settled=0;const all=[]
const one=(then)=>{const s=net.connect({host:'127.0.0.1',port:${planePort}});all.push(s);let done=false
const end=(hi)=>{if(done)return;done=true;if(hi)greeted++;then(hi)};s.on('data',()=>end(true));s.on('close',()=>end(false));s.on('error',()=>undefined)}
for(let i=0;i<${FLOOD};i++)one(()=>{if(++settled===${FLOOD}){console.log('greeted '+greeted);for(const s of all)s.destroy()
setTimeout(()=>one((hi)=>{console.log('afterwards '+(hi?'carried':'refused'));process.exit(0)}),1000)}})
setTimeout(()=>{console.log('gave up at '+settled+' settled, '+greeted+' greeted');process.exit(1)},60000).unref()`
        const d = driver()
        const w = await d.start(spec('w-flood', planePort, [process.execPath, '-e', code]))
        try {
          const relay = Number.parseInt(readFileSync(join(dataDir, 'workers', 'w-flood', 'forward.pid'), 'utf8'), 10)
          let relayFds = 0
          await until(
            async () => {
              try {
                relayFds = Math.max(relayFds, readdirSync(`/proc/${relay}/fd`).length)
              } catch {
                // ended with the sandbox
              }
              return w.logs.history().some((l) => /^(afterwards|gave up)/.test(l.line))
            },
            90_000,
            'the flood settling',
          )
          const lines = w.logs.history().map((l) => l.line)
          const greeted = Number(lines.find((l) => l.startsWith('greeted '))?.split(' ')[1])
          expect(most, lines.slice(-5).join('\n')).toBeLessThanOrEqual(RELAY_MAX_CONNECTIONS)
          expect(greeted, lines.slice(-20).join('\n')).toBeLessThanOrEqual(RELAY_MAX_CONNECTIONS)
          // The link still works up to the cap, and again once the flood is gone.
          expect(greeted).toBeGreaterThan(RELAY_MAX_CONNECTIONS / 2)
          expect(lines).toContain('afterwards carried')
          // Two descriptors a carried connection, a few of node's own.
          expect(relayFds).toBeLessThan(2 * RELAY_MAX_CONNECTIONS + 64)
        } finally {
          await end(d, w)
          plane.close()
          for (const s of open) s.destroy()
        }
      },
    )

    it.skipIf(!asRoot)(
      'keeps publishing the other ports when a connection comes to a declared port no socket can have (99999)',
      async () => {
        const d = driver()
        const code = `require('net').createServer((s)=>s.end('pong')).listen(8080,()=>console.log('listening'))`
        // Endpoints' ports are not range-checked (digits, 1 to 5 of them): the relay is given what was declared.
        const w = await d.start({
          ...spec('w-bad-port', port, [process.execPath, '-e', code]),
          ports: [
            { port: 99999, protocol: 'http' },
            { port: 8080, protocol: 'http' },
          ],
        })
        const answer = (publicPort: number) =>
          new Promise<string>((resolve) => {
            let got = ''
            const s = connect(publicPort, '127.0.0.1')
            s.on('data', (c: Buffer) => {
              got += c
            })
            s.on('error', (e) => resolve(`error ${(e as NodeJS.ErrnoException).code}`))
            s.on('close', () => resolve(got))
          })
        try {
          await until(async () => w.logs.history().some((l) => l.line === 'listening'), 20_000, 'the program listening')
          const [bad, good] = w.ports
          expect(await answer(bad.publicPort)).toBe('')
          await new Promise((resolve) => setTimeout(resolve, 300))
          expect(await answer(good.publicPort)).toBe('pong')
        } finally {
          await end(d, w)
        }
      },
    )

    it.skipIf(!asRoot)(
      "ends no other workload's relay when the pid its file names has since become that relay's",
      async () => {
        const d = driver()
        const sleeper = [process.execPath, '-e', 'setTimeout(()=>{},600000)']
        const a = await d.start(spec('w-stale', port, sleeper))
        const b = await d.start(spec('w-other', port, sleeper))
        const fileOf = (id: string) => join(dataDir, 'workers', id, 'forward.pid')
        try {
          const other = Number.parseInt(readFileSync(fileOf('w-other'), 'utf8'), 10)
          // A's relay ended while no control plane ran and its pid went to B's: A's file, B's pid.
          const [, ...rest] = readFileSync(fileOf('w-stale'), 'utf8').trim().split(' ')
          writeFileSync(fileOf('w-stale'), `${[other, ...rest].join(' ')}\n`)
          await end(d, a)
          await new Promise((resolve) => setTimeout(resolve, 500))
          expect(readFileSync(`/proc/${other}/comm`, 'utf8').trim()).toBe(FORWARDER_NAME)
        } finally {
          await end(d, b)
        }
      },
    )

    it.skipIf(!asRoot)(
      "forwards as the sandbox user, without capabilities or the tenant's env, and never outlives the sandbox",
      async () => {
        const d = driver()
        const secret = 'tenant-secret-4f7c1e'
        const w = await d.start(
          spec('w-forwarder', port, [process.execPath, '-e', 'setTimeout(()=>{},600000)', secret], { SECRET: secret }),
        )
        const pidFile = join(dataDir, 'workers', 'w-forwarder', 'forward.pid')
        const pid = Number.parseInt(readFileSync(pidFile, 'utf8'), 10)
        expect(readFileSync(`/proc/${pid}/comm`, 'utf8').trim()).toBe(FORWARDER_NAME)
        const status = readFileSync(`/proc/${pid}/status`, 'utf8')
        expect(status).toMatch(new RegExp(`^Uid:\\s+${SANDBOX_UID}\\s+${SANDBOX_UID}\\s+${SANDBOX_UID}`, 'm'))
        expect(status).toMatch(/^Gid:\s+65534\s+65534\s+65534/m)
        for (const cap of ['CapPrm', 'CapEff', 'CapBnd', 'CapAmb'])
          expect(status).toMatch(new RegExp(`^${cap}:\\s+0+$`, 'm'))
        expect(status).toMatch(/^NoNewPrivs:\s+1$/m)
        const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean)
        expect(environ.map((e) => e.split('=')[0]).sort()).toEqual(
          ['LANG', 'NODE_CHANNEL_FD', 'NODE_CHANNEL_SERIALIZATION_MODE', 'PATH'].sort(),
        )
        expect(readFileSync(`/proc/${pid}/environ`, 'utf8')).not.toContain(secret)
        // With its pid file gone (no control plane to end it), the sandbox killed outright: it ends by itself.
        rmSync(pidFile)
        await w.stop(0)
        await w.exited
        await until(async () => !existsSync(`/proc/${pid}`), 10_000, 'the forwarder ending with its sandbox')
        await d.remove(w.ref)
      },
    )
  },
)

if (sandbox.kind !== 'bwrap') console.log(`control plane link tests skipped: ${sandbox.reason}`)
