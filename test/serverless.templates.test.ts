import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

// R6: image or templateId, and how a template resolves into an endpoint.
describe('POST /v2/serverless with templateId (R6)', () => {
  let s: TestServer
  let key: string
  let otherKey: string
  let registryId: string
  let tpl: any
  beforeAll(async () => {
    s = await startTestServer()
    key = await s.accountKey('tpl-co')
    otherKey = await s.accountKey('tpl-other')
    registryId = (await s.api('POST', '/v2/registries', { name: 'ghcr', username: 'u', password: 'p' }, key)).body.id
    tpl = await template(key, {
      name: 'worker',
      image: 'ghcr.io/acme/worker:2',
      args: 'python -u handler.py',
      disk: 25,
      ports: ['8000/http'],
      env: { MODEL: 'base', LOG_LEVEL: 'info' },
      registry: registryId,
      allowedCudaVersions: ['12.4', '12.8'],
      startSsh: true,
      startJupyter: true,
    })
  })
  afterAll(() => s.stop())

  async function template(k: string, body: object) {
    const r = await s.api('POST', '/v2/templates', { serverless: true, ...body }, k)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body
  }
  const base = { name: 'ep', type: 'QUEUE', scaling: { type: 'QUEUE_DELAY', queueDelay: 4 } }
  const gpu = { pools: ['ADA_24'] }
  const cpu = [{ id: 'cpu3c', vcpuCount: 2 }]
  async function create(body: object, k = key) {
    return s.api('POST', '/v2/serverless', { ...base, ...body }, k)
  }
  async function created(body: object, k = key) {
    const r = await create(body, k)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body
  }

  it('requires image unless templateId is set (422)', async () => {
    const r = await create({ gpu })
    expect(r.status).toBe(422)
    expect(r.body.errors).toEqual(['image: is required unless templateId is set'])
  })

  it('copies image, args, disk, ports, env and registry from the template', async () => {
    const ep = await created({ templateId: tpl.id, gpu })
    expect(ep).toMatchObject({
      image: 'ghcr.io/acme/worker:2',
      args: 'python -u handler.py',
      cmd: ['python', '-u', 'handler.py'],
      entrypoint: [],
      disk: 25,
      ports: ['8000/http'],
      env: { MODEL: 'base', LOG_LEVEL: 'info' },
      registry: registryId,
    })
    expect(ep).not.toHaveProperty('templateId')
  })

  it('lets explicit body fields win, merging env per key with the body winning', async () => {
    const ep = await created({
      templateId: tpl.id,
      gpu,
      image: 'ghcr.io/acme/worker:3',
      cmd: ['python', 'other.py'],
      disk: 40,
      ports: [],
      registry: null,
      env: { MODEL: 'large', EXTRA: '1' },
    })
    expect(ep).toMatchObject({
      image: 'ghcr.io/acme/worker:3',
      cmd: ['python', 'other.py'],
      args: 'python other.py',
      disk: 40,
      ports: [],
      registry: null,
      env: { MODEL: 'large', LOG_LEVEL: 'info', EXTRA: '1' },
    })
  })

  it('seeds gpu.allowedCudaVersions from the template only for GPU creates that set neither CUDA field', async () => {
    expect((await created({ templateId: tpl.id, gpu })).gpu).toMatchObject({
      allowedCudaVersions: ['12.4', '12.8'],
      minCudaVersion: null,
    })
    expect((await created({ templateId: tpl.id, gpu: { ...gpu, minCudaVersion: '12.2' } })).gpu).toMatchObject({
      allowedCudaVersions: [],
      minCudaVersion: '12.2',
    })
    expect((await created({ templateId: tpl.id, gpu: { ...gpu, allowedCudaVersions: ['12.1'] } })).gpu).toMatchObject({
      allowedCudaVersions: ['12.1'],
    })
    expect((await created({ templateId: tpl.id, gpu: { ...gpu, allowedCudaVersions: [] } })).gpu).toMatchObject({
      allowedCudaVersions: [],
    })
    const onCpu = await created({ templateId: tpl.id, cpu })
    expect(onCpu.gpu).toBeNull()
    expect(onCpu.cpu).toEqual([{ id: 'cpu3c', vcpuCount: 2, memory: 4 }])
  })

  it('ignores the pod-only startSsh and startJupyter flags', async () => {
    const ep = await created({ templateId: tpl.id, cpu })
    expect(ep).not.toHaveProperty('startSsh')
    expect(ep).not.toHaveProperty('startJupyter')
    expect(Object.keys(ep.env).sort()).toEqual(['LOG_LEVEL', 'MODEL'])
    expect(ep.ports).toEqual(['8000/http'])
  })

  it('is not changed by later template edits', async () => {
    const own = await template(key, { name: 'mutable', image: 'img:1', env: { A: '1' } })
    const ep = await created({ templateId: own.id, cpu })
    const patched = await s.api('PATCH', `/v2/templates/${own.id}`, { image: 'img:2', env: { A: '2' }, disk: 99 }, key)
    expect(patched.status).toBe(200)
    const again = await s.api('GET', `/v2/serverless/${ep.id}`, undefined, key)
    expect(again.body).toMatchObject({ image: 'img:1', env: { A: '1' }, disk: 20 })
  })

  it("accepts another account's public template, without its registry credential", async () => {
    const theirRegistry = (await s.api('POST', '/v2/registries', { name: 'r', username: 'u', password: 'p' }, otherKey))
      .body.id
    const pub = await template(otherKey, {
      name: 'shared',
      image: 'pub:1',
      public: true,
      registry: theirRegistry,
      env: { P: '1' },
    })
    const ep = await created({ templateId: pub.id, cpu })
    expect(ep).toMatchObject({ image: 'pub:1', env: { P: '1' }, registry: null })
  })

  it('accepts an official template', async () => {
    const ep = await created({ templateId: 'hangar-echo', cpu })
    expect(ep.image).toBe('hangar/echo:latest')
  })

  it("answers 404 for an unknown template and for another account's private one", async () => {
    const priv = await template(otherKey, { name: 'private', image: 'p:1' })
    for (const id of ['tpl_missing', priv.id]) {
      const r = await create({ templateId: id, cpu })
      expect(r.status).toBe(404)
      expect(r.body).toMatchObject({ status: 404, detail: `template ${JSON.stringify(id)} was not found` })
    }
  })

  it('rejects a pod template with 422 and an empty templateId with 422', async () => {
    const pod = await template(key, { name: 'pod', image: 'p:1', serverless: false })
    const r = await create({ templateId: pod.id, cpu })
    expect(r.status).toBe(422)
    expect(r.body.errors).toEqual([`templateId: template "${pod.id}" is a pod template, not a serverless one`])
    const empty = await create({ templateId: '', image: 'x', cpu })
    expect(empty.status).toBe(422)
    expect(empty.body.errors).toEqual(['templateId: must NOT have fewer than 1 characters'])
  })

  it('keeps the template bound, so the template cannot be deleted while the endpoint exists', async () => {
    const own = await template(key, { name: 'bound', image: 'b:1' })
    const ep = await created({ templateId: own.id, cpu })
    expect((await s.api('DELETE', `/v2/templates/${own.id}`, undefined, key)).status).toBe(400)
    expect((await s.api('DELETE', `/v2/serverless/${ep.id}`, undefined, key)).status).toBe(204)
    expect((await s.api('DELETE', `/v2/templates/${own.id}`, undefined, key)).status).toBe(204)
  })
})
