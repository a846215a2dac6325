import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RegistryService } from '../src/services/storage/RegistryService.js'
import { SecretBox } from '../src/services/SecretBox.js'
import { SqliteStore } from '../src/store/sqlite/SqliteStore.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const USERNAME = 'robot$user-7c1f9e2a'
const PASSWORD = 'pw-9d8c7b6a5f4e3d2c1b0a'

describe('registries', () => {
  let s: TestServer
  let alice: string
  let bob: string
  /** Every raw response body of the secret-bearing requests, to search for the plaintext. */
  const seen: string[] = []
  beforeAll(async () => {
    s = await startTestServer()
    alice = await s.accountKey('reg-alice')
    bob = await s.accountKey('reg-bob')
  })
  afterAll(() => s.stop())

  const raw = async (method: string, path: string, body?: unknown, key = alice) => {
    const res = await fetch(s.url + path, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    seen.push(text)
    return { status: res.status, text, body: text ? JSON.parse(text) : undefined }
  }
  const accountId = async (name: string): Promise<string> =>
    (await s.api('GET', '/v2/admin/accounts')).body.accounts.find((a: { name: string }) => a.name === name).id

  it('creates, lists, gets and deletes a credential, showing only id and name', async () => {
    const created = await raw('POST', '/v2/registries', { name: 'docker-hub', username: USERNAME, password: PASSWORD })
    expect(created.status).toBe(201)
    expect(created.body).toEqual({ id: expect.stringMatching(/^reg_/), name: 'docker-hub' })
    const id = created.body.id
    const list = await raw('GET', '/v2/registries')
    expect(list.body).toEqual({ registries: [{ id, name: 'docker-hub' }] })
    expect((await raw('GET', `/v2/registries/${id}`)).body).toEqual({ id, name: 'docker-hub' })
    expect((await raw('GET', '/v2/registries', undefined, bob)).body).toEqual({ registries: [] })
    expect((await raw('GET', `/v2/registries/${id}`, undefined, bob)).status).toBe(404)
    expect((await raw('DELETE', `/v2/registries/${id}`, undefined, bob)).status).toBe(404)
    const del = await raw('DELETE', `/v2/registries/${id}`)
    expect(del.status).toBe(204)
    expect(del.text).toBe('')
    const gone = await raw('GET', `/v2/registries/${id}`)
    expect(gone.status).toBe(404)
    expect(gone.body.detail).toBe(`container registry credential "${id}" was not found`)
  })

  it('rejects unknown keys and empty or missing secrets with 422, without echoing them', async () => {
    const extra = await raw('POST', '/v2/registries', {
      name: 'x',
      username: USERNAME,
      password: PASSWORD,
      url: 'ghcr.io',
    })
    expect(extra.status).toBe(422)
    expect(extra.body.errors).toEqual(["$: additional properties 'url' not allowed"])
    const empty = await raw('POST', '/v2/registries', { name: 'x', username: '', password: PASSWORD })
    expect(empty.status).toBe(422)
    expect(empty.body.errors).toEqual(['username: must NOT have fewer than 1 characters'])
    const missing = await raw('POST', '/v2/registries', { name: 'x', username: USERNAME })
    expect(missing.body.errors).toEqual(['password: is required'])
    const patch = await raw('PATCH', '/v2/registries/anything', { name: 'y' })
    expect(patch.status).toBe(405)
  })

  it('never shows the username or password in a response, and stores neither in clear', async () => {
    const created = await raw('POST', '/v2/registries', { name: 'kept', username: USERNAME, password: PASSWORD })
    await raw('GET', '/v2/registries')
    await raw('GET', `/v2/registries/${created.body.id}`)
    await raw('POST', '/v2/templates', { name: 't', image: 'private/img:1', registry: created.body.id })
    await raw('GET', '/v2/templates')
    for (const text of seen) {
      expect(text).not.toContain(USERNAME)
      expect(text).not.toContain(PASSWORD)
    }
    if (s.hangar.store.dialect === 'postgres') {
      // On PostgreSQL the stored row is the record as the adapter writes it (JSON text in `documents`).
      const stored = JSON.stringify(await s.hangar.store.registries.get(created.body.id))
      expect(stored).toContain('kept')
      expect(stored).not.toContain(USERNAME)
      expect(stored).not.toContain(PASSWORD)
      expect(existsSync(join(s.dataDir, 'hangar.db'))).toBe(false) // no SQLite file beside a PostgreSQL store
      return
    }
    // WAL mode keeps recent writes in the -wal file until a checkpoint: search both.
    const files = ['hangar.db', 'hangar.db-wal'].map((f) => join(s.dataDir, f)).filter((f) => existsSync(f))
    expect(files.length).toBeGreaterThan(0)
    for (const f of files) expect(statSync(f).mode & 0o777).toBe(0o600)
    const bytes = Buffer.concat(files.map((f) => readFileSync(f)))
    expect(bytes.includes(Buffer.from('kept'))).toBe(true) // the search would find plaintext if it were there
    expect(bytes.includes(Buffer.from(USERNAME))).toBe(false)
    expect(bytes.includes(Buffer.from(PASSWORD))).toBe(false)
  })

  it('keeps the key in <dataDir>/secret.key, readable by the owner only', () => {
    const file = join(s.dataDir, 'secret.key')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).toHaveLength(32)
  })

  it('clears the registry of templates that used a deleted credential', async () => {
    const reg = await raw('POST', '/v2/registries', { name: 'temp', username: 'u', password: 'p' })
    const t = await raw('POST', '/v2/templates', { name: 't', image: 'private/img:1', registry: reg.body.id })
    expect(t.body.registry).toBe(reg.body.id)
    expect((await raw('DELETE', `/v2/registries/${reg.body.id}`)).status).toBe(204)
    expect((await raw('GET', `/v2/templates/${t.body.id}`)).body.registry).toBeNull()
  })

  it('refuses to delete a credential an endpoint of the account pulls with', async () => {
    const reg = await raw('POST', '/v2/registries', { name: 'in-use', username: 'u', password: 'p' })
    await s.hangar.store.endpoints.insert({
      id: 'ep_pulls',
      accountId: await accountId('reg-alice'),
      createdAt: new Date().toISOString(),
      registry: reg.body.id,
    } as never)
    const r = await raw('DELETE', `/v2/registries/${reg.body.id}`)
    expect(r.status).toBe(400)
    expect(r.body.errors).toEqual([
      `registry: "${reg.body.id}" is used by endpoint ep_pulls; change their registry first`,
    ])
    expect((await raw('GET', `/v2/registries/${reg.body.id}`)).status).toBe(200)
    await s.hangar.store.endpoints.delete('ep_pulls')
  })

  describe('delegations', () => {
    it('creates, lists and deletes a delegation parsed from an ECR ARN', async () => {
      const created = await raw('POST', '/v2/registries/delegations', {
        resource: 'arn:aws:ecr:eu-west-1:123456789012:repository/team/worker:v2',
        name: 'worker',
      })
      expect(created.status).toBe(201)
      expect(created.body).toEqual({
        id: expect.stringMatching(/^dlg_/),
        name: 'worker',
        delegatorUserId: await accountId('reg-alice'),
        awsUser: '123456789012',
        repository: 'team/worker',
        tag: 'v2',
        awsRegion: 'eu-west-1',
        dockerRegistryUri: '123456789012.dkr.ecr.eu-west-1.amazonaws.com',
        createdAt: expect.stringMatching(/Z$/),
      })
      const untagged = await raw('POST', '/v2/registries/delegations', {
        resource: 'arn:aws:ecr:us-east-1:123456789012:repository/base',
      })
      expect(untagged.body).toMatchObject({ name: null, tag: 'latest', repository: 'base' })
      const list = await raw('GET', '/v2/registries/delegations')
      expect(list.body.delegations.map((d: { id: string }) => d.id)).toEqual([created.body.id, untagged.body.id])
      expect((await raw('GET', '/v2/registries/delegations', undefined, bob)).body).toEqual({ delegations: [] })
      expect((await raw('DELETE', `/v2/registries/delegations/${created.body.id}`, undefined, bob)).status).toBe(404)
      expect((await raw('DELETE', `/v2/registries/delegations/${created.body.id}`)).status).toBe(204)
      expect((await raw('DELETE', `/v2/registries/delegations/${created.body.id}`)).status).toBe(404)
    })

    it.each([
      [
        'not-an-arn',
        'resource: "not-an-arn" is not an ARN; expected arn:aws:ecr:<region>:<account>:repository/<name>[:<tag>]',
      ],
      [
        'arn:aws:s3:us-east-1:123456789012:repository/x1',
        'resource: service "s3" is not "ecr"; only container repositories can be delegated',
      ],
      ['arn:aws:ecr:mars:123456789012:repository/x1', 'resource: region "mars" is not a region name like us-east-1'],
      ['arn:aws:ecr:us-east-1:1234:repository/x1', 'resource: account "1234" must be 12 digits'],
      ['arn:aws:ecr:us-east-1:123456789012:bucket/x1', 'resource: resource "bucket/x1" must start with "repository/"'],
      [
        'arn:aws:ecr:us-east-1:123456789012:repository/Upper',
        'resource: repository name "Upper" must be 2-256 lower-case characters: letters, digits and . _ - / between them',
      ],
    ])('rejects %s with 422 naming the bad part', async (resource, error) => {
      const r = await raw('POST', '/v2/registries/delegations', { resource })
      expect(r.status).toBe(422)
      expect(r.body.errors).toEqual([error])
    })

    it('rejects unknown keys with 422', async () => {
      const r = await raw('POST', '/v2/registries/delegations', {
        resource: 'arn:aws:ecr:us-east-1:123456789012:repository/x1',
        awsRegion: 'x',
      })
      expect(r.body.errors).toEqual(["$: additional properties 'awsRegion' not allowed"])
    })
  })
})

describe('RegistryService credentials', () => {
  it('decrypts credentials for runtimes, also after a restart with the same key file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hangar-secrets-'))
    try {
      const clock = { now: () => Date.now() }
      const store = new SqliteStore(join(dir, 'h.db'))
      await store.accounts.insert({
        id: 'acc_1',
        name: 'one',
        rateLimitExempt: false,
        createdAt: new Date().toISOString(),
      })
      const first = new RegistryService({ store, clock, secrets: SecretBox.open(join(dir, 'secret.key')) })
      const { id } = await first.create('acc_1', { name: 'n', username: USERNAME, password: PASSWORD })
      const again = new RegistryService({ store, clock, secrets: SecretBox.open(join(dir, 'secret.key')) })
      expect(await again.credentials('acc_1', id)).toEqual({ username: USERNAME, password: PASSWORD })
      await expect(again.credentials('acc_other', id)).rejects.toThrow(/was not found/)
      await store.close()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('refuses a sealed value moved to another field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hangar-box-'))
    try {
      const box = SecretBox.open(join(dir, 'secret.key'))
      const sealed = box.seal('hunter2', 'registry:r1:password')
      expect(box.open(sealed, 'registry:r1:password')).toBe('hunter2')
      expect(() => box.open(sealed, 'registry:r1:username')).toThrow()
      expect(() => box.open(sealed, 'registry:r2:password')).toThrow()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
