import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

// Create rules R10-R13 (scaling, workers, container settings, placement) through the real server.
describe('POST /v2/serverless: scaling, workers, container and placement rules', () => {
  let s: TestServer
  let key: string
  let otherKey: string
  beforeAll(async () => {
    s = await startTestServer()
    key = await s.accountKey('settings-co')
    otherKey = await s.accountKey('settings-other')
  })
  afterAll(() => s.stop())

  const queue = {
    name: 'ep',
    type: 'QUEUE',
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    image: 'ghcr.io/acme/worker:1',
    cpu: [{ id: 'cpu3c', vcpuCount: 2 }],
  }
  const lb = { ...queue, type: 'LOAD_BALANCER', scaling: { type: 'REQUEST_COUNT', requestCount: 8 } }
  const create = (body: unknown, k = key) => s.api('POST', '/v2/serverless', body, k)

  async function rejected(body: unknown, status: 400 | 422, errors: unknown[]) {
    const r = await create(body)
    expect(r.status, JSON.stringify(r.body)).toBe(status)
    expect(r.body.errors).toEqual(errors)
  }
  async function created(body: unknown, k = key) {
    const r = await create(body, k)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body
  }

  describe('R10 scaling', () => {
    it('validates each scaler variant (422), with no extra properties', async () => {
      await rejected({ ...queue, scaling: { type: 'QUEUE_DELAY', queueDelay: 0.4 } }, 422, [
        'scaling.queueDelay: must be >= 0.5',
      ])
      await rejected({ ...queue, scaling: { type: 'REQUEST_COUNT', requestCount: 0 } }, 422, [
        'scaling.requestCount: must be >= 1',
      ])
      await rejected({ ...queue, scaling: { type: 'QUEUE_DELAY', queueDelay: 2, requestCount: 2 } }, 422, [
        "scaling: additional properties 'requestCount' not allowed",
      ])
      await rejected({ ...queue, scaling: { type: 'QUEUE_DELAY', requestCount: 2 } }, 422, [
        'scaling.queueDelay: is required',
        "scaling: additional properties 'requestCount' not allowed",
      ])
      await rejected({ ...queue, scaling: { type: 'CPU_LOAD', target: 2 } }, 422, [
        'scaling.type: must be one of "QUEUE_DELAY", "REQUEST_COUNT", got "CPU_LOAD"',
      ])
      await rejected({ ...queue, scaling: { queueDelay: 2 } }, 422, ['scaling.type: is required'])
    })
    it('accepts a fractional queue delay and REQUEST_COUNT on a queue endpoint', async () => {
      expect((await created({ ...queue, scaling: { type: 'QUEUE_DELAY', queueDelay: 0.5 } })).scaling).toEqual({
        type: 'QUEUE_DELAY',
        queueDelay: 0.5,
      })
      expect((await created({ ...queue, scaling: { type: 'REQUEST_COUNT', requestCount: 3 } })).scaling).toEqual({
        type: 'REQUEST_COUNT',
        requestCount: 3,
      })
    })
    it('requires REQUEST_COUNT for LOAD_BALANCER endpoints (400)', async () => {
      await rejected({ ...lb, scaling: { type: 'QUEUE_DELAY', queueDelay: 4 } }, 400, [
        'scaling.type: a LOAD_BALANCER endpoint requires REQUEST_COUNT scaling; QUEUE_DELAY applies to QUEUE endpoints only',
      ])
      const ep = await created({ ...lb, workers: { idleTimeout: 30 } })
      expect(ep.workers).toEqual({ min: 0, max: 3, idleTimeout: 30 })
    })
    it('rejects workers.idleTimeout for a queue endpoint on REQUEST_COUNT and omits it from the response', async () => {
      const onRequests = { ...queue, scaling: { type: 'REQUEST_COUNT', requestCount: 2 } }
      await rejected({ ...onRequests, workers: { idleTimeout: 5 } }, 400, [
        'workers.idleTimeout: is not used by a QUEUE endpoint scaling on REQUEST_COUNT; omit it (it applies to QUEUE_DELAY scaling and to LOAD_BALANCER endpoints)',
      ])
      const ep = await created({ ...onRequests, workers: { min: 1 } })
      expect(ep.workers).toEqual({ min: 1, max: 3 })
      expect((await s.api('GET', `/v2/serverless/${ep.id}`, undefined, key)).body.workers).toEqual({ min: 1, max: 3 })
    })
  })

  describe('R11 workers', () => {
    it('defaults min 0, max 3, idleTimeout 10', async () => {
      expect((await created(queue)).workers).toEqual({ min: 0, max: 3, idleTimeout: 10 })
    })
    it('enforces the bounds (422)', async () => {
      await rejected({ ...queue, workers: { min: -1, max: -2, idleTimeout: 0 } }, 422, [
        'workers.min: must be >= 0',
        'workers.max: must be >= 0',
        'workers.idleTimeout: must be >= 1',
      ])
      await rejected({ ...queue, workers: { idleTimeout: 3601 } }, 422, ['workers.idleTimeout: must be <= 3600'])
    })
    it('rejects min above max (400), counting the default max', async () => {
      await rejected({ ...queue, workers: { min: 4, max: 2 } }, 400, ['workers.min: 4 is above workers.max 2'])
      await rejected({ ...queue, workers: { min: 5 } }, 400, ['workers.min: 5 is above workers.max 3 (the default)'])
    })
    it('accepts min equal to max, 0 workers and the idleTimeout bounds', async () => {
      expect((await created({ ...queue, workers: { min: 2, max: 2, idleTimeout: 3600 } })).workers).toEqual({
        min: 2,
        max: 2,
        idleTimeout: 3600,
      })
      expect((await created({ ...queue, workers: { max: 0, idleTimeout: 1 } })).workers).toEqual({
        min: 0,
        max: 0,
        idleTimeout: 1,
      })
    })
  })

  describe('R12 container settings', () => {
    it('splits a shell args string into cmd and keeps args as stored', async () => {
      const ep = await created({ ...queue, args: `python -u "my handler.py" --name 'a b'` })
      expect(ep).toMatchObject({
        args: `python -u "my handler.py" --name 'a b'`,
        cmd: ['python', '-u', 'my handler.py', '--name', 'a b'],
        entrypoint: [],
      })
    })
    it('reads a JSON object args into entrypoint and cmd', async () => {
      const args = JSON.stringify({ entrypoint: ['/bin/sh', '-c'], cmd: ['echo hi'] })
      expect(await created({ ...queue, args })).toMatchObject({ args, entrypoint: ['/bin/sh', '-c'], cmd: ['echo hi'] })
    })
    it('accepts cmd and entrypoint arrays, and args with them only when they agree', async () => {
      const ep = await created({ ...queue, entrypoint: ['python'], cmd: ['-u', 'handler.py'] })
      expect(ep).toMatchObject({
        entrypoint: ['python'],
        cmd: ['-u', 'handler.py'],
        args: JSON.stringify({ entrypoint: ['python'], cmd: ['-u', 'handler.py'] }),
      })
      await created({ ...queue, args: 'python handler.py', cmd: ['python', 'handler.py'] })
      await rejected({ ...queue, args: 'python handler.py', cmd: ['python', 'other.py'] }, 400, [
        'cmd: ["python","other.py"] disagrees with args, which describes cmd ["python","handler.py"]',
      ])
    })
    it('rejects args it cannot read (422)', async () => {
      await rejected({ ...queue, args: 'echo "unterminated' }, 422, ['args: unterminated double quote at character 6'])
    })
    it('defaults disk to 10 GB and requires at least 1', async () => {
      expect((await created(queue)).disk).toBe(10)
      expect((await created({ ...queue, disk: 50 })).disk).toBe(50)
      await rejected({ ...queue, disk: 0 }, 422, ['disk: must be >= 1'])
    })
    it('requires ports as <port>/<protocol>', async () => {
      expect((await created({ ...queue, ports: ['8000/http', '22/tcp'] })).ports).toEqual(['8000/http', '22/tcp'])
      await rejected({ ...queue, ports: ['8000', 'http/8000'] }, 422, [
        'ports[0]: must match ^\\d{1,5}/(http|tcp|udp)$, got "8000"',
        'ports[1]: must match ^\\d{1,5}/(http|tcp|udp)$, got "http/8000"',
      ])
    })
    it('accepts only a registry credential of the account, or null', async () => {
      const own = await s.api('POST', '/v2/registries', { name: 'ghcr', username: 'u', password: 'p' }, key)
      const foreign = await s.api('POST', '/v2/registries', { name: 'theirs', username: 'u', password: 'p' }, otherKey)
      expect(own.status).toBe(201)
      expect((await created({ ...queue, registry: own.body.id })).registry).toBe(own.body.id)
      expect((await created({ ...queue, registry: null })).registry).toBeNull()
      await rejected({ ...queue, registry: foreign.body.id }, 400, [
        `registry: "${foreign.body.id}" is not one of your container registry credentials; see /v2/registries`,
      ])
      await rejected({ ...queue, registry: 'nope' }, 400, [
        'registry: "nope" is not one of your container registry credentials; see /v2/registries',
      ])
    })
    it('keeps env as given', async () => {
      expect((await created({ ...queue, env: { MODEL: 'tiny', EMPTY: '' } })).env).toEqual({ MODEL: 'tiny', EMPTY: '' })
      await rejected({ ...queue, env: { N: 1 } }, 422, ['env.N: must be string, got number'])
    })
  })

  describe('R13 data centers, network volumes, flashboot, timeout', () => {
    it('accepts existing data centers, or none to let the scheduler choose', async () => {
      expect((await created({ ...queue, dataCenterIds: ['LOCAL-1'] })).dataCenterIds).toEqual(['LOCAL-1'])
      expect((await created({ ...queue, dataCenterIds: [] })).dataCenterIds).toEqual([])
      expect((await created(queue)).dataCenterIds).toEqual([])
    })
    it('rejects unknown data centers (400) and repeated ones (422)', async () => {
      await rejected({ ...queue, dataCenterIds: ['LOCAL-1', 'EU-NOWHERE-9'] }, 400, [
        'dataCenterIds[1]: "EU-NOWHERE-9" is not a data center; see /v2/catalog/datacenters',
      ])
      await rejected({ ...queue, dataCenterIds: ['LOCAL-1', 'LOCAL-1'] }, 422, [
        expect.stringMatching(/^dataCenterIds: must not contain duplicates/),
      ])
    })
    it("accepts the account's network volumes and rejects others' and unknown ones (400)", async () => {
      const own = await s.api('POST', '/v2/network-volumes', { name: 'models', size: 10, dataCenter: 'LOCAL-1' }, key)
      const foreign = await s.api(
        'POST',
        '/v2/network-volumes',
        { name: 'theirs', size: 10, dataCenter: 'LOCAL-1' },
        otherKey,
      )
      expect(own.status).toBe(201)
      expect((await created({ ...queue, networkVolumes: [own.body.id] })).networkVolumes).toEqual([own.body.id])
      await rejected({ ...queue, networkVolumes: [foreign.body.id, 'nv-missing'] }, 400, [
        `networkVolumes[0]: "${foreign.body.id}" is not one of your network volumes; see /v2/network-volumes`,
        'networkVolumes[1]: "nv-missing" is not one of your network volumes; see /v2/network-volumes',
      ])
    })
    it('rejects two volumes in one data center, since a worker mounts the one of its data center (400)', async () => {
      const a = await s.api('POST', '/v2/network-volumes', { name: 'a', size: 10, dataCenter: 'LOCAL-1' }, key)
      const b = await s.api('POST', '/v2/network-volumes', { name: 'b', size: 10, dataCenter: 'LOCAL-1' }, key)
      await rejected({ ...queue, networkVolumes: [a.body.id, b.body.id] }, 400, [
        `networkVolumes[1]: volume "${b.body.id}" is in data center LOCAL-1 like "${a.body.id}"; a worker mounts one volume, the one in its data center`,
      ])
    })
    it('defaults flashboot to OFF and timeout to 300000 ms, and validates both', async () => {
      const ep = await created(queue)
      expect(ep).toMatchObject({ flashboot: 'OFF', timeout: 300000 })
      expect(await created({ ...queue, flashboot: 'PRIORITY_FLASHBOOT', timeout: 60000 })).toMatchObject({
        flashboot: 'PRIORITY_FLASHBOOT',
        timeout: 60000,
      })
      await rejected({ ...queue, flashboot: 'ON', timeout: 0 }, 422, [
        'flashboot: must be one of "OFF", "FLASHBOOT", "PRIORITY_FLASHBOOT", got "ON"',
        'timeout: must be >= 1000',
      ])
    })
  })

  describe('requestUrls', () => {
    it('gives a queue endpoint every job operation under /v2/{id}', async () => {
      const ep = await created(queue)
      const q = `${s.url}/v2/${ep.id}`
      expect(ep.requestUrls).toEqual({
        run: `${q}/run`,
        runSync: `${q}/runsync`,
        status: `${q}/status/{job_id}`,
        stream: `${q}/stream/{job_id}`,
        cancel: `${q}/cancel/{job_id}`,
        retry: `${q}/retry/{job_id}`,
        purgeQueue: `${q}/purge-queue`,
        health: `${q}/health`,
      })
    })
    it('gives a load-balancing endpoint a base and a health URL that follows HEALTH_CHECK_PATH', async () => {
      const ep = await created(lb)
      expect(ep.requestUrls).toEqual({ base: `${s.url}/lb/${ep.id}`, health: `${s.url}/lb/${ep.id}/ping` })
      const custom = await created({ ...lb, env: { HEALTH_CHECK_PATH: '/healthz' } })
      expect(custom.requestUrls.health).toBe(`${s.url}/lb/${custom.id}/healthz`)
    })
    it('builds them from the configured public URL', async () => {
      const t = await startTestServer({ publicUrl: 'https://hangar.example.com/' })
      try {
        // The public URL does not resolve here, so call the bound port directly.
        const port = (t.hangar.app.server.address() as { port: number }).port
        const res = await fetch(`http://127.0.0.1:${port}/v2/serverless`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.adminKey}`, 'content-type': 'application/json' },
          body: JSON.stringify(queue),
        })
        const body = (await res.json()) as { id: string; requestUrls: { run: string } }
        expect(res.status).toBe(201)
        expect(body.requestUrls.run).toBe(`https://hangar.example.com/v2/${body.id}/run`)
      } finally {
        await t.stop()
      }
    })
  })
})
