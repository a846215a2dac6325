import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import Docker from 'dockerode'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort } from '../src/runtime/freePort.js'
import { LABELS } from '../src/runtime/labels.js'
import { containerEnv, containerSkipReason } from './helpers/containers.js'
import { serveWithConfig } from './helpers/process.js'
import { pidOf } from './helpers/runtime.js'
import { until } from './helpers/until.js'

const skip = containerSkipReason()
const runtimes = [
  { name: 'process', image: 'hangar/echo:latest', engine: undefined, skip: null },
  {
    name: 'docker (Podman)',
    image: containerEnv.workerImage,
    engine: {
      address: containerEnv.dockerHost,
      network: 'host',
      gpus: 'none',
      cgroupParent: containerEnv.cgroupParent,
    },
    skip,
  },
]

describe.each(runtimes)(
  'a control plane killed with SIGKILL re-adopts its workers: $name',
  ({ name, image, engine, skip }) => {
    if (skip) console.warn(skip)
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-adopt-'))
    const configFile = join(dataDir, 'config.json')
    const procs: ChildProcess[] = []
    afterAll(() => {
      for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL')
      rmSync(dataDir, { recursive: true, force: true })
    })

    it.skipIf(skip !== null)(
      'keeps the running worker (no duplicate) even where its host is now estimated smaller, serves jobs with it, and removes what it does not know',
      async () => {
        // A fixed port: adopted workers call the URL they were given. The fleet is this machine under its
        // usual id, with the vCPUs given here.
        const port = await freePort()
        const configure = (vcpus: number) =>
          writeFileSync(
            configFile,
            JSON.stringify({
              host: '127.0.0.1',
              port,
              logLevel: 'silent',
              fleet: {
                detectGpus: false,
                hosts: [{ id: 'local', dataCenterId: 'LOCAL-1', vcpus, memoryGb: 32, ...(engine ? { engine } : {}) }],
              },
            }),
          )
        configure(8)
        const first = await serveWithConfig(dataDir, configFile)
        procs.push(first.proc)
        const key = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()
        const call = async (path: string, method = 'GET', body?: unknown) => {
          const res = await fetch(first.url + path, {
            method,
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: body === undefined ? undefined : JSON.stringify(body),
          })
          return { status: res.status, body: (await res.json()) as any }
        }
        const created = await call('/v2/serverless', 'POST', {
          name: `adopt-${name.split(' ')[0]}`,
          type: 'QUEUE',
          image,
          cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
          scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
          workers: { min: 1, max: 1, idleTimeout: 60 },
        })
        expect(created.status).toBe(201)
        const ep = created.body.id
        const before = (await call(`/v2/${ep}/runsync`, 'POST', { input: { n: 1 } })).body
        expect(before.status).toBe('COMPLETED')
        const worker = before.workerId

        const docker = engine ? new Docker({ socketPath: new URL(engine.address!).pathname }) : null
        const installation = readFileSync(join(dataDir, 'installation-id'), 'utf8').trim()
        const record = () => {
          const rows = readStore(dataDir, `SELECT runtime_ref FROM workers WHERE id = '${worker}'`)
          return rows[0]
        }
        const ref = record()
        const running = async () =>
          docker ? (await docker.getContainer(ref.split(':')[2]).inspect()).State.Running : isAlive(pidOf(ref))
        // Something of this installation the store does not know: a start cut short by the crash.
        const stray = docker
          ? await docker.createContainer({
              Image: containerEnv.bbImage,
              Cmd: ['sleep', '600'],
              Labels: { [LABELS.installation]: installation, [LABELS.kind]: 'worker', [LABELS.host]: 'local' },
              HostConfig: { NetworkMode: 'host', CgroupParent: containerEnv.cgroupParent },
            })
          : null
        await stray?.start()

        first.proc.kill('SIGKILL')
        await new Promise((r) => first.proc.once('exit', r))
        expect(await running()).toBe(true)
        // The restarted control plane's estimate of the host has no room for the worker's 2 vCPUs (a host
        // configured smaller, or a Kubernetes Node read as NotReady): the worker runs, so it still holds them.
        configure(1)

        const second = await serveWithConfig(dataDir, configFile)
        procs.push(second.proc)
        expect(second.url).toBe(first.url)
        const list = await until(
          async () => {
            const l = (await call(`/v2/serverless/${ep}/workers`)).body
            return l.workers.some((w: { id: string; status: string }) => w.id === worker && w.status === 'IDLE')
              ? l
              : undefined
          },
          30_000,
          'the adopted worker idle',
        )
        expect(list.workers).toHaveLength(1)
        const after = (await call(`/v2/${ep}/runsync`, 'POST', { input: { n: 2 } })).body
        expect(after).toMatchObject({ status: 'COMPLETED', workerId: worker })
        expect(record()).toBe(ref)
        expect(await running()).toBe(true)
        if (docker) {
          const ours = await docker.listContainers({
            all: true,
            filters: JSON.stringify({ label: [`${LABELS.installation}=${installation}`] }),
          })
          expect(ours.map((c) => c.Id)).toEqual([ref.split(':')[2]])
        }

        // A graceful stop leaves nothing behind.
        second.proc.kill('SIGTERM')
        await new Promise((r) => second.proc.once('exit', r))
        await until(async () => !(await running().catch(() => false)), 15_000, 'the worker stopped')
      },
      120_000,
    )
  },
)

function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}

/** Reads the store while the control plane may be down (a read-only connection). */
function readStore(dataDir: string, sql: string): string[] {
  const db = new Database(join(dataDir, 'hangar.db'), { readonly: true })
  try {
    return (db.prepare(sql).all() as Array<Record<string, string>>).map((r) => Object.values(r)[0])
  } finally {
    db.close()
  }
}
