import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('templates', () => {
  let s: TestServer
  let alice: string
  let bob: string
  beforeAll(async () => {
    s = await startTestServer()
    alice = await s.accountKey('tpl-alice')
    bob = await s.accountKey('tpl-bob')
  })
  afterAll(() => s.stop())

  const accountId = async (name: string): Promise<string> =>
    (await s.api('GET', '/v2/admin/accounts')).body.accounts.find((a: { name: string }) => a.name === name).id
  const create = async (body: object, key = alice) => {
    const r = await s.api('POST', '/v2/templates', { name: 'worker', image: 'acme/worker:1', ...body }, key)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body
  }

  it('creates a template with every key present and the documented defaults', async () => {
    const r = await s.api('POST', '/v2/templates', { name: 'minimal', image: 'acme/minimal:1' }, alice)
    expect(r.status).toBe(201)
    expect(r.body).toEqual({
      id: expect.stringMatching(/^tpl_/),
      name: 'minimal',
      image: 'acme/minimal:1',
      args: '',
      cmd: [],
      entrypoint: [],
      disk: 20,
      env: {},
      ports: [],
      registry: null,
      mounts: {},
      serverless: false,
      public: false,
      category: 'NVIDIA',
      startSsh: true,
      startJupyter: true,
      allowedCudaVersions: [],
    })
    expect(r.body).not.toHaveProperty('accountId')
  })

  it('gets, lists, updates and deletes an own template', async () => {
    const t = await create({
      name: 'crud',
      env: { A: '1' },
      ports: ['8000/http'],
      mounts: { persistent: { size: 20, path: '/workspace' } },
      allowedCudaVersions: ['12.4'],
    })
    expect((await s.api('GET', `/v2/templates/${t.id}`, undefined, alice)).body).toEqual(t)
    const list = await s.api('GET', '/v2/templates', undefined, alice)
    expect(list.status).toBe(200)
    expect(list.body.templates.map((x: { id: string }) => x.id)).toContain(t.id)

    const patched = await s.api(
      'PATCH',
      `/v2/templates/${t.id}`,
      { name: 'crud-2', env: { B: '2' }, allowedCudaVersions: [], serverless: true, mounts: {} },
      alice,
    )
    expect(patched.status).toBe(200)
    expect(patched.body).toEqual({ ...t, name: 'crud-2', env: { B: '2' }, allowedCudaVersions: [], serverless: true })

    const del = await s.api('DELETE', `/v2/templates/${t.id}`, undefined, alice)
    expect(del.status).toBe(204)
    expect(del.body).toBeUndefined()
    const gone = await s.api('GET', `/v2/templates/${t.id}`, undefined, alice)
    expect(gone.status).toBe(404)
    expect(gone.body.detail).toBe(`template "${t.id}" was not found`)
  })

  it('rejects unknown keys, network mounts and missing fields with 422', async () => {
    const r = await s.api('POST', '/v2/templates', { name: 'x', image: 'i', bogus: 1 }, alice)
    expect(r.status).toBe(422)
    expect(r.body.errors).toEqual(["$: additional properties 'bogus' not allowed"])
    const mounts = await s.api('POST', '/v2/templates', { name: 'x', image: 'i', mounts: { network: [] } }, alice)
    expect(mounts.status).toBe(422)
    expect(mounts.body.errors).toEqual(["mounts: additional properties 'network' not allowed"])
    const missing = await s.api('POST', '/v2/templates', { name: 'x' }, alice)
    expect(missing.body.errors).toEqual(['image: is required'])
    const t = await create({})
    const patch = await s.api('PATCH', `/v2/templates/${t.id}`, { accountId: 'other' }, alice)
    expect(patch.status).toBe(422)
    expect(patch.body.errors).toEqual(["$: additional properties 'accountId' not allowed"])
  })

  it('rejects a NUL byte in an env name or value on create and update (422)', async () => {
    const r = await s.api('POST', '/v2/templates', { name: 'x', image: 'i', env: { 'N\u0000UL': 'y' } }, alice)
    expect(r.status).toBe(422)
    expect(r.body.errors).toEqual([
      'env: key "N\\u0000UL" must not contain a NUL character (\\u0000), which no program can be given',
    ])
    const t = await create({})
    const patch = await s.api('PATCH', `/v2/templates/${t.id}`, { env: { A: 'b\u0000' } }, alice)
    expect(patch.status).toBe(422)
    expect(patch.body.errors).toEqual([
      'env.A: must not contain a NUL character (\\u0000), which no program can be given, got "b\\u0000"',
    ])
  })

  describe('container command', () => {
    it('stores args as given and returns it deconstructed', async () => {
      const t = await create({ args: `python -u 'my handler.py'` })
      expect(t).toMatchObject({
        args: `python -u 'my handler.py'`,
        cmd: ['python', '-u', 'my handler.py'],
        entrypoint: [],
      })
      const json = await create({ args: '{"entrypoint": ["python"], "cmd": ["a.py"]}' })
      expect(json).toMatchObject({
        args: '{"entrypoint": ["python"], "cmd": ["a.py"]}',
        cmd: ['a.py'],
        entrypoint: ['python'],
      })
    })

    it('rewrites args when only cmd or entrypoint changes, and clears with ""', async () => {
      const t = await create({ args: 'python a.py' })
      const p1 = await s.api('PATCH', `/v2/templates/${t.id}`, { entrypoint: ['/bin/sh', '-c'] }, alice)
      expect(p1.body).toMatchObject({
        args: '{"entrypoint":["/bin/sh","-c"],"cmd":["python","a.py"]}',
        cmd: ['python', 'a.py'],
        entrypoint: ['/bin/sh', '-c'],
      })
      const p2 = await s.api('PATCH', `/v2/templates/${t.id}`, { name: 'renamed' }, alice)
      expect(p2.body).toMatchObject({ args: p1.body.args, cmd: p1.body.cmd, entrypoint: p1.body.entrypoint })
      const p3 = await s.api('PATCH', `/v2/templates/${t.id}`, { args: '' }, alice)
      expect(p3.body).toMatchObject({ args: '', cmd: [], entrypoint: [] })
    })

    it('accepts args with cmd describing the same command and refuses a different one with 400', async () => {
      await create({ args: 'python a.py', cmd: ['python', 'a.py'] })
      const r = await s.api(
        'POST',
        '/v2/templates',
        { name: 'x', image: 'i', args: 'python a.py', cmd: ['python', 'b.py'] },
        alice,
      )
      expect(r.status).toBe(400)
      expect(r.body.errors).toEqual([
        'cmd: ["python","b.py"] disagrees with args, which describes cmd ["python","a.py"]',
      ])
    })

    it('refuses args it cannot read with 422', async () => {
      const r = await s.api('POST', '/v2/templates', { name: 'x', image: 'i', args: `echo 'open` }, alice)
      expect(r.status).toBe(422)
      expect(r.body.errors).toEqual(['args: unterminated single quote at character 6'])
    })
  })

  it('accepts only registry credentials of the account', async () => {
    const reg = await s.api('POST', '/v2/registries', { name: 'hub', username: 'u', password: 'p' }, alice)
    const t = await create({ registry: reg.body.id })
    expect(t.registry).toBe(reg.body.id)
    const foreign = await s.api('POST', '/v2/templates', { name: 'x', image: 'i', registry: reg.body.id }, bob)
    expect(foreign.status).toBe(400)
    expect(foreign.body.errors).toEqual([`registry: no container registry credential "${reg.body.id}" in this account`])
    const cleared = await s.api('PATCH', `/v2/templates/${t.id}`, { registry: null }, alice)
    expect(cleared.body.registry).toBeNull()
  })

  describe('visibility across accounts', () => {
    it('answers a foreign private template with 404 everywhere', async () => {
      const t = await create({ name: 'private' })
      for (const [method, body] of [['GET'], ['PATCH', { name: 'stolen' }], ['DELETE']] as const) {
        const r = await s.api(method, `/v2/templates/${t.id}`, body, bob)
        expect(r.status, method).toBe(404)
        expect(r.body.detail).toBe(`template "${t.id}" was not found`)
      }
      expect(
        (await s.api('GET', '/v2/templates', undefined, bob)).body.templates.map((x: { id: string }) => x.id),
      ).not.toContain(t.id)
    })

    it('lets others read a public template, without its registry, but not change it', async () => {
      const reg = await s.api('POST', '/v2/registries', { name: 'private-hub', username: 'u', password: 'p' }, alice)
      const t = await create({ name: 'shared', public: true, registry: reg.body.id })
      const read = await s.api('GET', `/v2/templates/${t.id}`, undefined, bob)
      expect(read.status).toBe(200)
      expect(read.body).toEqual({ ...t, registry: null })
      expect((await s.api('PATCH', `/v2/templates/${t.id}`, { name: 'mine now' }, bob)).status).toBe(404)
      expect((await s.api('DELETE', `/v2/templates/${t.id}`, undefined, bob)).status).toBe(404)
      expect(
        (await s.api('GET', '/v2/templates', undefined, bob)).body.templates.map((x: { id: string }) => x.id),
      ).not.toContain(t.id)
    })

    it('lets every account read official templates but change none', async () => {
      const r = await s.api('GET', '/v2/templates/hangar-echo', undefined, bob)
      expect(r.status).toBe(200)
      expect(r.body).toMatchObject({
        id: 'hangar-echo',
        image: 'hangar/echo:latest',
        serverless: true,
        public: true,
        registry: null,
      })
      const patch = await s.api('PATCH', '/v2/templates/hangar-echo', { name: 'mine' }, bob)
      expect(patch.status).toBe(404)
      expect((await s.api('DELETE', '/v2/templates/hangar-echo', undefined, s.adminKey)).status).toBe(404)
      expect((await s.api('GET', '/v2/templates/hangar-echo', undefined, alice)).body.name).toBe(r.body.name)
    })
  })

  describe('catalog', () => {
    it('lists the official templates by default and under source=official', async () => {
      const byDefault = await s.api('GET', '/v2/catalog/templates', undefined, bob)
      expect(byDefault.status).toBe(200)
      const ids = byDefault.body.templates.map((t: { id: string }) => t.id)
      expect(ids).toEqual(expect.arrayContaining(['hangar-echo', 'hangar-sleep', 'hangar-stream', 'hangar-fail']))
      expect(byDefault.body.templates.some((t: { serverless: boolean }) => !t.serverless)).toBe(true)
      expect((await s.api('GET', '/v2/catalog/templates?source=official', undefined, bob)).body).toEqual(byDefault.body)
    })

    it('lists public templates of every account under source=community, and nothing under verified', async () => {
      const pub = await create({ name: 'community-pub', public: true })
      const priv = await create({ name: 'community-priv' })
      const r = await s.api('GET', '/v2/catalog/templates?source=community', undefined, bob)
      const ids = r.body.templates.map((t: { id: string }) => t.id)
      expect(ids).toContain(pub.id)
      expect(ids).not.toContain(priv.id)
      expect(ids).not.toContain('hangar-echo')
      const verified = await s.api('GET', '/v2/catalog/templates?source=verified', undefined, bob)
      expect(verified.body).toEqual({ templates: [] })
    })

    it('rejects an unknown source with 422', async () => {
      const r = await s.api('GET', '/v2/catalog/templates?source=popular', undefined, bob)
      expect(r.status).toBe(422)
      expect(r.body.errors).toEqual(['query.source: must be one of "official", "verified", "community", got "popular"'])
    })
  })

  it('refuses to delete a template an endpoint of the account is bound to', async () => {
    const t = await create({ name: 'bound', serverless: true })
    const owner = await accountId('tpl-alice')
    await s.hangar.store.endpoints.insert({
      id: 'ep_bound',
      accountId: owner,
      createdAt: new Date().toISOString(),
      templateId: t.id,
    } as never)
    const r = await s.api('DELETE', `/v2/templates/${t.id}`, undefined, alice)
    expect(r.status).toBe(400)
    expect(r.body.errors).toEqual([`template: "${t.id}" is bound to endpoint ep_bound; delete them first`])
    await s.hangar.store.endpoints.delete('ep_bound')
    expect((await s.api('DELETE', `/v2/templates/${t.id}`, undefined, alice)).status).toBe(204)
  })

  it('lets a READ_ONLY key read templates but not create them', async () => {
    const reader = await s.accountKey('tpl-reader', 'READ_ONLY')
    expect((await s.api('GET', '/v2/templates', undefined, reader)).status).toBe(200)
    expect((await s.api('POST', '/v2/templates', { name: 'x', image: 'i' }, reader)).status).toBe(403)
  })
})
