import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { groupMembers } from '../src/runtime/process/procfs.js'
import { spawnServe, type ServeProcess } from './helpers/process.js'
import { until } from './helpers/until.js'
import { alive } from './helpers/pods.js'

/**
 * Issue 27, item 8: a worker on the unmodified Python `runpod` SDK (which has no orphan rule of its own) ends
 * once its control plane has been gone for the orphan timeout, because of the supervisor Hangar runs it under.
 */
const CLIENT = join(import.meta.dirname, '..', '..', 'shared', 'clients', 'runpod-python')
const HANDLER = join(import.meta.dirname, 'fixtures', 'orphan_handler.py')
// Debian's python3 has the SDK's dependencies (python3-aiohttp); another python3 first in PATH may not.
const PYTHON = ['/usr/bin/python3', 'python3'].find((p) => spawnSync(p, ['-c', 'import aiohttp']).status === 0)
const missing = !existsSync(join(CLIENT, 'sdk', 'runpod'))
  ? `no runpod SDK at ${CLIENT}`
  : !PYTHON
    ? 'no python3 with aiohttp (Debian: python3-aiohttp)'
    : null
if (missing) console.log(`orphaned Python worker test skipped: ${missing}`)

describe.skipIf(missing !== null)('orphaned workers', { timeout: 90_000 }, () => {
  const parent = mkdtempSync(join(tmpdir(), 'hangar-orphan-'))
  let serve: ServeProcess | undefined
  afterAll(async () => {
    if (serve && serve.child.exitCode === null && serve.child.signalCode === null) {
      serve.child.kill('SIGKILL')
      await serve.exited
    }
    rmSync(parent, { recursive: true, force: true })
  })

  it('a Python runpod worker ends once its control plane has been SIGKILLed for the orphan timeout', async () => {
    const dataDir = join(parent, 'data')
    const configFile = join(parent, 'config.json')
    const env = {
      PYTHONPATH: `${join(CLIENT, 'sdk')}:${join(CLIENT, 'shims')}`,
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
      RUNPOD_SKIP_GPU_CHECK: 'true',
      // The floor with 2 s pings (2 intervals + 1 s): the same limit the TypeScript SDK would apply.
      HANGAR_ORPHAN_TIMEOUT_MS: '5000',
    }
    writeFileSync(
      configFile,
      JSON.stringify({
        fleet: { detectGpus: false },
        jobs: { pingIntervalMs: 2000 },
        images: { 'test/python:1': { command: [PYTHON!, '-u', HANDLER], env } },
      }),
    )
    serve = await spawnServe(dataDir, { HANGAR_CONFIG: configFile })
    const key = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await fetch(serve!.url + path, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body ? JSON.stringify(body) : undefined,
      })
      return { status: r.status, body: await r.json() }
    }
    const ep = await call('POST', '/v2/serverless', {
      name: 'py',
      type: 'QUEUE',
      image: 'test/python:1',
      cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
      scaling: { type: 'QUEUE_DELAY', queueDelay: 1 },
      workers: { min: 1, max: 1, idleTimeout: 60 },
    })
    expect(ep.status, JSON.stringify(ep.body)).toBe(201)
    // It runs (in the sandbox where the machine has one) and reaches the control plane: the worker is ready.
    // (A job is not run: on this branch the Python SDK's take of a job does not finish, sandbox or not.)
    const ready = await until(
      async () => {
        const health = await call('GET', `/v2/${ep.body.id}/health`)
        return health.body.workers?.idle >= 1 ? health.body : undefined
      },
      60_000,
      'the Python worker to be ready',
    )
    expect(ready.workers).toMatchObject({ idle: 1 })

    const [workerId] = readdirSync(join(dataDir, 'workers'))
    const ref = (
      JSON.parse(readFileSync(join(dataDir, 'workers', workerId, 'workload.json'), 'utf8')) as { ref: string }
    ).ref
    const leader = Number(ref.split(':')[2])
    const py = groupMembers(leader).find((p) => p.comm.startsWith('python'))
    expect(py, `a python process in group ${leader}`).toBeDefined()

    serve.child.kill('SIGKILL')
    await serve.exited
    // Still there right after (a restarted control plane would adopt it) ...
    expect(alive(py!.pid)).toBe(true)
    // ... and gone after the orphan timeout (5 s, checked once a second), with the reason in its log.
    await until(async () => !alive(py!.pid) && !alive(leader), 30_000, 'the orphaned Python worker to end')
    expect(readFileSync(join(dataDir, 'workers', workerId, 'output.log'), 'utf8')).toContain(
      'hangar: no control plane has run for 5 s: ending this worker',
    )
  })
})
