import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli/main.js'
import { errorSummary } from '../src/services/workers/lastOutput.js'
import { terminateAll, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

/** What a new user met on the way (issue 29), each against a real server, the CLI run in-process. */
describe('CLI papercuts', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({
      // A worker that crashes the way Node programs do: the message, then stack frames and Node's banner.
      images: { 'acme/crash:1': { command: [process.execPath, '-e', "throw new Error('HANDLER_PATH is not set')"] } },
    })
  })
  afterAll(async () => {
    await terminateAll(s)
    await s.stop()
  })

  const hangar = async (...args: string[]): Promise<{ code: number; out: string }> => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    const con = vi.spyOn(console, 'error').mockImplementation(() => {})
    const log = vi.spyOn(console, 'log').mockImplementation(() => {})
    try {
      const code = await main([...args, '--url', s.url, '--api-key', s.adminKey])
      const text = (m: { mock: { calls: unknown[][] } }) => m.mock.calls.map((c) => c.map(String).join(' ')).join('\n')
      return { code, out: [text(out), text(err), text(con), text(log)].filter(Boolean).join('\n') }
    } finally {
      out.mockRestore()
      err.mockRestore()
      con.mockRestore()
      log.mockRestore()
    }
  }

  it("docs/pods-and-clusters.md's `pods create --template hangar-pod --gpu` works: the name defaults to the template's id", async () => {
    const r = await hangar('pods', 'create', '--template', 'hangar-pod', '--gpu', 'NVIDIA L4', '--json')
    expect(r.code, r.out).toBe(0)
    const pod = JSON.parse(r.out)
    expect(pod).toMatchObject({ name: 'hangar-pod', gpu: { id: 'NVIDIA L4', count: 1 } })
    await waitPod(s, pod.id, 'RUNNING')
    const help = await hangar('pods', 'create', '--help')
    const flat = help.out.replace(/\s+/g, ' ')
    expect(flat).toContain('pod name (default: the template id, else the image name)')
    expect(flat).toContain('(see hangar catalog gpus)')
  })

  it('prints a problem whose only error is its detail once', async () => {
    const r = await hangar('pods', 'create', '--name', 'x', '--cpu', 'cpu3c:2')
    expect(r.code).toBe(6)
    const detail = /error: 422 [^:]+: (.*)/.exec(r.out)![1]
    expect(r.out.split(detail).length - 1, r.out).toBe(1)
  })

  it('`endpoints create --cpu cpu3c` says what is wrong (exit 2)', async () => {
    const r = await hangar('endpoints', 'create', '--name', 'e', '--image', 'hangar/echo', '--cpu', 'cpu3c')
    expect(r.code).toBe(2)
    expect(r.out).toContain('error: --cpu cpu3c: expected <flavor>:<vcpus>, e.g. cpu3c:2.')
  })

  it('`hangar catalog` lists GPU types, CPU flavors and data centers', async () => {
    const gpus = await hangar('catalog', 'gpus')
    expect(gpus.code).toBe(0)
    expect(gpus.out).toMatch(/ID\s+POOL\s+MEMORY GB/)
    expect(gpus.out).toContain('NVIDIA L4')
    const cpus = await hangar('catalog', 'cpus')
    expect(cpus.out).toMatch(/cpu3c\s+/)
    const dcs = JSON.parse((await hangar('catalog', 'datacenters', '--json')).out)
    expect(dcs.dataCenters.map((d: { id: string }) => d.id)).toEqual(['LOCAL-1'])
  })

  it('`volumes create` takes the only data center when none is given', async () => {
    const r = await hangar('volumes', 'create', '--name', 'data', '--size', '10', '--json')
    expect(r.code, r.out).toBe(0)
    expect(JSON.parse(r.out)).toMatchObject({ name: 'data', dataCenter: 'LOCAL-1' })
    await hangar('volumes', 'delete', JSON.parse(r.out).id)
  })

  it('the workers table shows the line that names a crash cause, not just "exited with code 1"', async () => {
    const ep = JSON.parse(
      (
        await hangar(
          'endpoints',
          'create',
          '--name',
          'crashy',
          '--image',
          'acme/crash:1',
          '--cpu',
          'cpu3c:2',
          '--min',
          '1',
          '--max',
          '1',
          '--json',
        )
      ).out,
    )
    const worker = await until(
      async () =>
        (await s.api('GET', `/v2/serverless/${ep.id}/workers`)).body.workers.find(
          (w: { status: string }) => w.status === 'UNHEALTHY',
        ),
      30_000,
      'a crashed worker',
    )
    expect(worker.lastError).toContain('Error: HANDLER_PATH is not set')
    expect(worker.lastError).not.toContain('Node.js v')
    const table = await hangar('endpoints', 'workers', ep.id)
    expect(table.out).toMatch(/UNHEALTHY.*: Error: HANDLER_PATH is not set/)
    expect(
      errorSummary(
        'worker exited with code 1; its last output:\nTraceback (most recent call last):\n  File "h.py", line 1\nModuleNotFoundError: No module named \'runpod\'',
      ),
    ).toBe("worker exited with code 1: ModuleNotFoundError: No module named 'runpod'")
  })
})
