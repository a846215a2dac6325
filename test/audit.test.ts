import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { auditSpecOf } from '../src/api/audit.js'
import { AuditLog } from '../src/services/audit/AuditLog.js'
import { silentLog } from '../src/services/log.js'
import { SqliteStore } from '../src/store/sqlite/SqliteStore.js'
import { ManualClock } from './helpers/clock.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const SECRET_VALUE = 'audit-test-value-never-logged'

describe('audit log (/v2/audit)', () => {
  let s: TestServer
  let alice: string
  let aliceReadOnly: string
  let bob: string
  let aliceAccount: string
  let aliceKeyId: string
  let templateId: string

  beforeAll(async () => {
    s = await startTestServer()
    alice = await s.accountKey('alice')
    aliceReadOnly = await s.accountKey('alice', 'READ_ONLY')
    bob = await s.accountKey('bob')
    const keys = (await s.api('GET', '/v2/admin/keys?account=alice')).body.keys
    aliceAccount = keys[0].accountId
    aliceKeyId = keys.find((k: any) => k.permission === 'ALL').id
    // Alice's changes: made, refused for want of permission, refused as invalid.
    expect((await s.api('POST', '/v2/secrets', { name: 'tok', value: SECRET_VALUE }, alice)).status).toBe(201)
    expect((await s.api('PATCH', '/v2/secrets/tok', { value: `${SECRET_VALUE}-2` }, alice)).status).toBe(200)
    const t = await s.api('POST', '/v2/templates', { name: 'audited', image: 'hangar/echo:latest' }, alice)
    templateId = t.body.id
    expect((await s.api('PATCH', `/v2/templates/${templateId}`, { name: 'renamed' }, alice)).status).toBe(200)
    expect((await s.api('POST', '/v2/secrets', { name: 'ro', value: SECRET_VALUE }, aliceReadOnly)).status).toBe(403)
    expect((await s.api('POST', '/v2/templates', { name: 'bad' }, alice)).status).toBe(422)
    expect((await s.api('DELETE', `/v2/templates/${templateId}`, undefined, alice)).status).toBe(204)
    // Reads and unauthenticated calls are not changes anyone made.
    await s.api('GET', '/v2/templates', undefined, alice)
    expect((await s.api('POST', '/v2/templates', { name: 'x', image: 'y' }, null)).status).toBe(401)
    // Bob's change, and the admin's: a key issued and revoked.
    await s.api('POST', '/v2/secrets', { name: 'bobs', value: SECRET_VALUE }, bob)
    const issued = await s.api('POST', '/v2/admin/keys', { account: 'bob', permission: 'READ_ONLY' })
    await s.api('POST', `/v2/admin/keys/${issued.body.id}/revoke`)
  })
  afterAll(async () => {
    await s?.stop()
  })

  it("records an account's changes, refusals too, newest first, and shows it only its own", async () => {
    const r = await s.api('GET', '/v2/audit', undefined, alice)
    expect(r.status).toBe(200)
    const entries = r.body.entries
    expect(entries.map((e: any) => [e.action, e.outcome, e.status])).toEqual([
      ['template.delete', 'success', 204],
      ['template.create', 'refused', 422],
      ['secret.create', 'refused', 403],
      ['template.update', 'success', 200],
      ['template.create', 'success', 201],
      ['secret.update', 'success', 200],
      ['secret.create', 'success', 201],
    ])
    expect(entries[0]).toEqual({
      id: expect.stringMatching(/^\d+$/),
      at: expect.any(String),
      actor: { type: 'key', id: aliceKeyId, accountId: aliceAccount },
      action: 'template.delete',
      resourceType: 'template',
      resourceId: templateId,
      outcome: 'success',
      status: 204,
      ip: '127.0.0.1',
      requestId: expect.any(String),
    })
    // A create's resource is the one it made; a refused one made none.
    expect(entries[4].resourceId).toBe(templateId)
    expect(entries[1].resourceId).toBeNull()
    expect(entries[2].actor.id).not.toBe(aliceKeyId)
    expect(JSON.stringify(entries)).not.toContain(SECRET_VALUE)
    // Bob sees his own only, and may not ask for Alice's.
    const bobs = await s.api('GET', '/v2/audit', undefined, bob)
    expect(bobs.body.entries.map((e: any) => e.action)).toEqual(['secret.create'])
    expect((await s.api('GET', `/v2/audit?account=${aliceAccount}`, undefined, bob)).status).toBe(403)
  })

  it('shows the admin every account, keys issued and revoked among them, or one account', async () => {
    const all = (await s.api('GET', '/v2/audit?limit=1000')).body.entries
    expect(all.slice(0, 3).map((e: any) => e.action)).toEqual(['key.revoke', 'key.issue', 'secret.create'])
    // Newest first: Bob's account, Alice's asked for again by her second key (a conflict, recorded), Alice's.
    expect(all.filter((e: any) => e.action === 'account.create').map((e: any) => e.status)).toEqual([201, 409, 201])
    const only = (await s.api('GET', `/v2/audit?account=${aliceAccount}`)).body.entries
    expect(only).toHaveLength(7)
    expect(new Set(only.map((e: any) => e.actor.accountId))).toEqual(new Set([aliceAccount]))
    expect((await s.api('GET', '/v2/audit?account=alice')).body.entries).toEqual(only)
  })

  it('filters by action (or prefix), resource, actor and time, and pages with a cursor', async () => {
    const q = async (query: string) =>
      (await s.api('GET', `/v2/audit?${query}`, undefined, alice)).body.entries.map((e: any) => e.action)
    expect(await q('action=secret.')).toEqual(['secret.create', 'secret.update', 'secret.create'])
    expect(await q('action=template.create')).toEqual(['template.create', 'template.create'])
    expect(await q(`resourceType=template&resourceId=${templateId}`)).toEqual([
      'template.delete',
      'template.update',
      'template.create',
    ])
    expect(await q(`actor=${aliceKeyId}&action=secret.`)).toEqual(['secret.update', 'secret.create'])
    expect(await q('until=2000-01-01T00:00:00Z')).toEqual([])
    expect(await q('since=2000-01-01T00:00:00Z&limit=1')).toEqual(['template.delete'])
    const bad = await s.api('GET', '/v2/audit?since=yesterday', undefined, alice)
    expect(bad.status).toBe(422)
    const paged: string[] = []
    let cursor: string | null = null
    do {
      const page: any = (await s.api('GET', `/v2/audit?limit=3${cursor ? `&cursor=${cursor}` : ''}`, undefined, alice))
        .body
      paged.push(...page.entries.map((e: any) => e.id))
      cursor = page.nextCursor
    } while (cursor)
    const whole = (await s.api('GET', '/v2/audit', undefined, alice)).body.entries.map((e: any) => e.id)
    expect(paged).toEqual(whole)
  })

  it('exports as JSON lines, asked by format=jsonl or by Accept', async () => {
    const page = (await s.api('GET', '/v2/audit', undefined, alice)).body.entries
    for (const [query, accept] of [
      ['?format=jsonl', undefined],
      ['', 'application/x-ndjson'],
    ] as const) {
      const res = await fetch(`${s.url}/v2/audit${query}`, {
        headers: { authorization: `Bearer ${alice}`, ...(accept ? { accept } : {}) },
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/)
      const text = await res.text()
      expect(text.endsWith('\n')).toBe(true)
      expect(
        text
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l)),
      ).toEqual(page)
    }
    const refused = await fetch(`${s.url}/v2/audit?format=jsonl&account=${aliceAccount}`, {
      headers: { authorization: `Bearer ${bob}` },
    })
    expect(refused.status).toBe(403)
  })
})

describe('audit log retention', () => {
  it('deletes entries older than the retention, and none with 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hangar-audit-'))
    const store = new SqliteStore(join(dir, 'hangar.db'))
    try {
      const clock = new ManualClock()
      const entry = { actor: { type: 'key' as const, id: 'k', accountId: 'a' }, action: 'pod.create' }
      const rest = { resourceType: 'pod', resourceId: 'p', outcome: 'success' as const, status: 201, ip: null }
      const keepAll = new AuditLog({ store, clock, log: silentLog, retentionDays: 0 })
      const log = new AuditLog({ store, clock, log: silentLog, retentionDays: 30 })
      log.record({ ...entry, ...rest, requestId: 'old' })
      await log.flush()
      clock.advance(31 * 86_400_000)
      log.record({ ...entry, ...rest, requestId: 'new' })
      await log.flush()
      expect(await keepAll.prune()).toBe(0)
      expect(await log.prune()).toBe(1)
      const left = await store.audit.query({ limit: 10 })
      expect(left.map((e) => e.requestId)).toEqual(['new'])
    } finally {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('audit log retention on a running server', () => {
  it('deletes entries past the retention when it starts', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-audit-serve-'))
    const clock = new ManualClock()
    const config = { audit: { retentionDays: 30 } }
    let s = await startTestServer(config, { dataDir, clock })
    try {
      const t = await s.api('POST', '/v2/templates', { name: 'old-change', image: 'hangar/echo:latest' })
      expect(t.status).toBe(201)
      expect((await s.api('GET', '/v2/audit?action=template.create')).body.entries).toHaveLength(1)
      await s.stop()
      clock.advance(31 * 86_400_000)
      s = await startTestServer(config, { dataDir, clock })
      const left = async () =>
        (await s.api('GET', '/v2/audit?action=template.create')).body.entries.map((e: any) => e.resourceId)
      // Pruning runs in the background once the server is ready.
      for (let i = 0; i < 100 && (await left()).length > 0; i++) await new Promise((r) => setTimeout(r, 50))
      expect(await left()).toEqual([])
    } finally {
      await s.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('audit names of routes', () => {
  it.each([
    ['POST', '/v2/serverless', 'endpoint.create'],
    ['PATCH', '/v2/serverless/:id', 'endpoint.update'],
    ['POST', '/v2/serverless/:id/webhook-secret/rotate', 'webhook-secret.rotate'],
    ['POST', '/v2/admin/keys', 'key.issue'],
    ['POST', '/v2/admin/keys/:id/revoke', 'key.revoke'],
    ['PUT', '/v2/account/ssh-keys', 'ssh-key.set'],
    ['DELETE', '/v2/registries/delegations/:id', 'delegation.delete'],
    ['POST', '/v2/pods/:id/action', 'pod.action'],
    ['PUT', '/v2/admin/accounts/:id/quotas', 'quota.set'],
    ['POST', '/v2/:endpointId/purge-queue', 'endpoint.purge-queue'],
  ])('%s %s is %s', (method, url, action) => {
    expect(auditSpecOf(method, url)?.action).toBe(action)
  })

  it('leaves out reads, job traffic and the worker protocol', () => {
    expect(auditSpecOf('GET', '/v2/pods')).toBeNull()
    expect(auditSpecOf('POST', '/v2/:endpointId/run')).toBeNull()
    expect(auditSpecOf('POST', '/v2/:endpointId/job-done/:workerId/:jobId')).toBeNull()
  })
})
