import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli/main.js'
import { terminateAll, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** `hangar pods ...` against a real server, run in-process with its output captured. */
describe('hangar pods', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer()
  })
  afterAll(async () => {
    await terminateAll(s)
    await s.stop()
  })

  const hangar = async (...args: string[]): Promise<{ code: number; out: string }> => {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    const con = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      const code = await main([...args, '--url', s.url, '--api-key', s.adminKey])
      return {
        code,
        out:
          out.mock.calls.map((c) => String(c[0])).join('') +
          err.mock.calls.map((c) => String(c[0])).join('') +
          con.mock.calls.map((c) => c.join(' ')).join('\n'),
      }
    } finally {
      out.mockRestore()
      err.mockRestore()
      con.mockRestore()
    }
  }

  it('creates, lists, stops, starts, reads logs and terminates a pod', async () => {
    const created = await hangar(
      'pods',
      'create',
      '--name',
      'cli-pod',
      '--image',
      'hangar/pod:latest',
      '--cpu',
      'cpu3c:2',
      '--port',
      '8080/http',
      '--env',
      'A=1',
      '--json',
    )
    expect(created.code, created.out).toBe(0)
    const pod = JSON.parse(created.out)
    expect(pod).toMatchObject({
      name: 'cli-pod',
      cpu: { id: 'cpu3c', vcpuCount: 2 },
      ports: ['8080/http'],
      env: { A: '1' },
    })
    await waitPod(s, pod.id, 'RUNNING')

    const list = await hangar('pods', 'list')
    expect(list.code).toBe(0)
    expect(list.out).toMatch(/ID\s+NAME\s+STATUS\s+MACHINE/)
    expect(list.out).toMatch(new RegExp(`${pod.id}\\s+cli-pod\\s+RUNNING\\s+cpu3c 2 vCPU`))

    const stopped = await hangar('pods', 'stop', pod.id, '--json')
    expect(JSON.parse(stopped.out)).toMatchObject({ status: 'EXITED', cost: 0 })
    expect((await hangar('pods', 'stop', pod.id)).code).toBe(6)
    expect(JSON.parse((await hangar('pods', 'start', pod.id, '--json')).out).status).toBe('PROVISIONING')
    await waitPod(s, pod.id, 'RUNNING')
    expect(JSON.parse((await hangar('pods', 'get', pod.id, '--json')).out).runtime.ports[0]).toMatchObject({
      private: 8080,
      type: 'http',
    })

    const logs = await hangar('pods', 'logs', pod.id, '--source', 'system', '--tail', '1000')
    expect(logs.code).toBe(0)
    expect(logs.out).toMatch(/\[system\] status EXITED -> PROVISIONING/)
    expect(logs.out).toMatch(/\[system\] status STARTING -> RUNNING/)

    expect((await hangar('pods', 'terminate', pod.id)).out).toBe(`terminated ${pod.id}\n`)
    expect((await hangar('pods', 'get', pod.id)).code).toBe(5)
  })

  it('refuses a bad create with the problem and exit code 6', async () => {
    const r = await hangar('pods', 'create', '--name', 'x', '--image', 'i')
    expect(r.code).toBe(6)
    expect(r.out).toContain('exactly one of gpu or cpu must be set; neither was sent')
  })

  it('creates a cluster, lists its members by rank, renames and deletes it', async () => {
    const created = await hangar(
      'clusters',
      'create',
      '--name',
      'cli-cl',
      '--type',
      'RAY',
      '--gpu',
      'NVIDIA GeForce RTX 4090',
      '--pods',
      '2',
      '--image',
      'hangar/cluster:latest',
      '--json',
    )
    expect(created.code, created.out).toBe(0)
    const c = JSON.parse(created.out)
    expect(c).toMatchObject({
      name: 'cli-cl',
      type: 'RAY',
      compute: { gpuTypeId: 'NVIDIA GeForce RTX 4090', gpuCountPerPod: 1, podCount: 2 },
      pods: { total: 2 },
    })
    const members = await hangar('clusters', 'pods', c.id)
    expect(members.out).toMatch(/RANK\s+ROLE\s+IP/)
    expect(members.out).toMatch(/\n0\s+RAY_HEAD\s+127\./)
    expect(members.out).toMatch(/\n1\s+RAY_WORKER\s+127\./)
    expect((await hangar('clusters', 'list')).out).toMatch(new RegExp(`${c.id}\\s+cli-cl\\s+RAY`))
    expect(JSON.parse((await hangar('clusters', 'rename', c.id, 'renamed', '--json')).out).name).toBe('renamed')
    expect((await hangar('clusters', 'delete', c.id)).out).toBe(`deleted ${c.id}\n`)
    expect((await hangar('clusters', 'get', c.id)).code).toBe(5)
  })
})
