import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { containerEnv, containerSkipReason } from './helpers/containers.js'
import { createEndpoint, endpointBody } from './helpers/endpoints.js'
import { startTestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const BIN = fileURLToPath(new URL('../bin/hangar.js', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'hangar-engine-check-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** `hangar engine check` (or another command) with these env variables: exit code and output. */
function check(env: Record<string, string>, args = ['engine', 'check']): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, HANGAR_CONFIG: '', HANGAR_WORKER_URL: '', HANGAR_DATA_DIR: dir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  child.stderr.on('data', (d) => (out += d))
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, out })))
}

describe('hangar engine check without an engine', () => {
  it('says there is none configured', async () => {
    const r = await check({ HANGAR_ENGINE: '' })
    expect(r.code).toBe(2)
    expect(r.out).toContain('no container engine is configured: set HANGAR_ENGINE=')
  })

  it('says the socket is missing and how to start the engine there', async () => {
    const r = await check({ HANGAR_ENGINE: `unix://${dir}/run/podman.sock` })
    expect(r.code).toBe(1)
    expect(r.out).toContain(`FAIL engine    unix://${dir}/run/podman.sock does not answer`)
    expect(r.out).toContain(
      `fix: no socket at ${dir}/run/podman.sock: start the engine's API there, e.g. \`podman system service --time=0 unix://${dir}/run/podman.sock &\` (its folder must exist: \`mkdir -p ${dir}/run\``,
    )
  })

  it('rejects a HANGAR_ENGINE that is neither an address nor JSON', async () => {
    const r = await check({ HANGAR_ENGINE: '{"address": ' })
    expect(r.code).not.toBe(0)
    expect(r.out).toContain('HANGAR_ENGINE: not an engine address nor a JSON engine object')
  })
})

describe('a worker that cannot reach the control plane', () => {
  it('is shown as not having called in, with the URL it was told, instead of INITIALIZING without a word', async () => {
    const s = await startTestServer({ workerUrl: 'http://192.0.2.1:8080' })
    try {
      const ep = (
        await createEndpoint(s, endpointBody('hangar/echo:latest', { workers: { min: 1, max: 1, idleTimeout: 60 } }))
      ).id
      const w = await until(
        async () =>
          (await s.api('GET', `/v2/serverless/${ep}/workers`)).body.workers.find(
            (x: { lastError: string | null }) => x.lastError,
          ),
        60_000,
        'a worker with a reason',
      )
      expect(w.status).toBe('INITIALIZING')
      expect(w.lastError).toMatch(
        /^has not called in for \d+ s: it cannot reach http:\/\/192\.0\.2\.1:8080, or its program is not a worker/,
      )
    } finally {
      await s.stop()
    }
  }, 90_000)
})

const skip = containerSkipReason()
if (skip) console.warn(skip)

describe.skipIf(skip !== null)('hangar engine check on Podman', () => {
  const engine = (extra: object = {}) =>
    JSON.stringify({ address: containerEnv.dockerHost, cgroupParent: containerEnv.cgroupParent, ...extra })

  it('passes every step with the defaults of a single machine (host network, workers call the listen address)', async () => {
    const r = await check({ HANGAR_ENGINE: engine(), HANGAR_PORT: '18431' })
    expect(r.out).toContain('network host, workers call http://127.0.0.1:18431')
    expect(r.out).toMatch(/ok {3}container a container on network host/)
    expect(r.out).toContain('ok   reach     a container reaches http://127.0.0.1:18431')
    expect(r.code, r.out).toBe(0)
  }, 120_000)

  it('reports a workerUrl containers cannot reach, and what to set instead', async () => {
    const r = await check({ HANGAR_ENGINE: engine(), HANGAR_WORKER_URL: 'http://192.0.2.1:8080' })
    expect(r.code).toBe(1)
    expect(r.out).toContain(
      'FAIL reach     a container cannot reach http://192.0.2.1:8080, the URL workers are told to call',
    )
    expect(r.out).toContain(
      "fix: containers share this host's network, so http://192.0.2.1:8080 must answer from this host: set workerUrl (HANGAR_WORKER_URL)",
    )
  }, 120_000)

  it('`hangar images build` builds (or finds up to date) every sample image', async () => {
    const r = await check({ HANGAR_ENGINE: engine() }, ['images', 'build'])
    expect(r.code, r.out).toBe(0)
    for (const name of ['echo', 'sleep', 'stream', 'fail', 'openai', 'http', 'pod', 'cluster'])
      expect(r.out).toMatch(new RegExp(`host local: localhost/hangar/${name}:[\\w.-]+ (built|up to date)`))
  }, 300_000)

  it('reports that on a bridge a container cannot call the loopback address', async () => {
    const r = await check({
      HANGAR_ENGINE: engine({ network: 'bridge', cgroupParent: undefined }),
      HANGAR_PORT: '18432',
    })
    expect(r.code).toBe(1)
    expect(r.out).toContain('FAIL reach     a container cannot reach http://127.0.0.1:18432')
    expect(r.out).toContain(`fix: on the bridge network a container's 127.0.0.1 is itself: set "network": "host"`)
  }, 120_000)
})
