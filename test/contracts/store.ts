import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { EndpointRecord, ReleaseRecord } from '../../src/store/EndpointStore.js'
import type { JobRecord } from '../../src/store/JobStore.js'
import type { NetworkVolumeRecord } from '../../src/store/NetworkVolumeStore.js'
import type { PodRecord } from '../../src/store/PodStore.js'
import type { Owned, OwnedCollection } from '../../src/store/OwnedCollection.js'
import type { DelegationRecord, RegistryRecord } from '../../src/store/RegistryStore.js'
import type { Store } from '../../src/store/Store.js'
import type { TemplateRecord } from '../../src/store/TemplateStore.js'
import type { WebhookDelivery } from '../../src/store/WebhookStore.js'
import type { WorkerRecord } from '../../src/store/WorkerStore.js'
import { usageCases } from './usageStore.js'
import { metricCases } from './metricStore.js'
import { auditCases } from './auditStore.js'
import { memberCases } from './memberStore.js'
import type { SecretRecord } from '../../src/store/SecretStore.js'
import { jsonValue } from '../../src/domain/RawJson.js'

/** A job read back with its JSON fields (input, output, progress: RawJson text) as plain values. */
function plain(j: JobRecord | undefined): JobRecord | undefined {
  return j && { ...j, input: jsonValue(j.input), output: jsonValue(j.output), progress: jsonValue(j.progress) }
}

/** A store to test and how to dispose of it (close, delete its file or schema). */
export interface StoreUnderTest {
  store: Store
  dispose(): Promise<void>
}

const T0 = '2026-01-01T00:00:00.000Z'
const at = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString()
/** Ids unique per test, so the cases share one store without seeing each other's data. */
const uid = (p: string) => `${p}_${randomUUID().slice(0, 8)}`

export function template(accountId: string, over: Partial<TemplateRecord> = {}): TemplateRecord {
  return {
    id: uid('tpl'),
    accountId,
    createdAt: T0,
    name: 't',
    image: 'img:1',
    args: '',
    cmd: [],
    entrypoint: [],
    disk: 20,
    env: { A: 'b' },
    ports: ['8000/http'],
    registry: null,
    mounts: {},
    serverless: true,
    public: false,
    category: 'NVIDIA',
    startSsh: true,
    startJupyter: true,
    allowedCudaVersions: [],
    ...over,
  }
}

export function endpoint(accountId: string, over: Partial<EndpointRecord> = {}): EndpointRecord {
  return {
    id: uid('ep'),
    accountId,
    createdAt: T0,
    version: 1,
    templateId: null,
    name: 'e',
    type: 'QUEUE',
    image: 'img:1',
    args: '',
    cmd: [],
    entrypoint: [],
    disk: 20,
    env: {},
    ports: [],
    registry: null,
    gpu: null,
    cpu: [{ id: 'cpu3c', vcpuCount: 2, memory: 4 }],
    workers: { min: 0, max: 3, idleTimeout: 10 },
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    dataCenterIds: [],
    networkVolumes: [],
    timeout: 300_000,
    flashboot: 'OFF',
    ...over,
  }
}

export function job(endpointId: string, over: Partial<JobRecord> = {}): JobRecord {
  const id = over.id ?? uid('job')
  return {
    id,
    endpointId,
    accountId: 'acc',
    status: 'IN_QUEUE',
    input: { id, nested: [1, 'two', null] },
    webhook: null,
    policy: null,
    s3Config: null,
    sync: false,
    lowPriority: false,
    executionTimeoutMs: 600_000,
    ttlMs: 86_400_000,
    retentionMs: 1_800_000,
    createdAt: 1_000,
    startedAt: null,
    completedAt: null,
    expiresAt: 1_000 + 86_400_000,
    retainUntil: null,
    workerId: null,
    output: undefined,
    error: null,
    retries: 0,
    progress: undefined,
    ...over,
  }
}

function worker(endpointId: string, over: Partial<WorkerRecord> = {}): WorkerRecord {
  return {
    id: uid('wrk'),
    endpointId,
    accountId: 'acc',
    state: 'STARTING',
    tokenHash: 'h'.repeat(64),
    version: 1,
    image: 'img:1',
    gpuTypeId: null,
    gpuCount: 0,
    dataCenterId: 'DC-1',
    hostId: null,
    runtimeRef: null,
    createdAt: 1_000,
    startedAt: null,
    stoppedAt: null,
    lastError: null,
    ...over,
  }
}

export function pod(accountId: string, over: Partial<PodRecord> = {}): PodRecord {
  return {
    id: uid('pod'),
    accountId,
    createdAt: T0,
    name: 'p',
    image: 'img:1',
    args: '',
    cmd: [],
    entrypoint: [],
    disk: 20,
    env: { A: 'b' },
    ports: ['8080/http'],
    registry: null,
    cloud: 'SECURE',
    dataCenterIds: [],
    globalNetworking: false,
    gpu: { id: 'NVIDIA L4', count: 1, allowedCudaVersions: [], minCudaVersion: null },
    cpu: null,
    mounts: { persistent: { size: 10, path: '/workspace' } },
    locked: false,
    status: 'RUNNING',
    placement: { hostId: 'h1', dataCenterId: 'DC-1', gpuIndices: [0], cudaVersion: '12.4', virtual: false },
    runtimeRef: 'process:h1:1:a:b:pod:x',
    portMappings: [{ privatePort: 8080, publicPort: 40000, protocol: 'http', ip: '127.0.0.1' }],
    startedAt: T0,
    lastError: null,
    cluster: null,
    ...over,
  }
}

/**
 * The behaviour every Store adapter must have; run once per adapter (test/store.<adapter>.test.ts). One
 * store serves the whole suite; every case works on ids of its own.
 */
export function storeContract(name: string, make: () => Promise<StoreUnderTest>) {
  describe(`Store contract: ${name}`, () => {
    let sut: StoreUnderTest
    let store: Store
    let acc: string
    let other: string
    beforeAll(async () => {
      sut = await make()
      store = sut.store
      acc = uid('acc')
      other = uid('acc')
      await store.accounts.insert({ id: acc, name: acc, rateLimitExempt: false, createdAt: T0 })
      await store.accounts.insert({ id: other, name: other, rateLimitExempt: true, createdAt: at(1) })
    })
    afterAll(async () => {
      await sut?.dispose()
    })

    describe('accounts and keys', () => {
      it('finds accounts by id and unique name, oldest first', async () => {
        expect(await store.accounts.get(acc)).toEqual({ id: acc, name: acc, rateLimitExempt: false, createdAt: T0 })
        expect((await store.accounts.getByName(other))?.rateLimitExempt).toBe(true)
        expect(await store.accounts.get('nope')).toBeUndefined()
        const ids = (await store.accounts.list()).map((a) => a.id)
        expect(ids.indexOf(acc)).toBeLessThan(ids.indexOf(other))
        await expect(
          store.accounts.insert({ id: uid('acc'), name: acc, rateLimitExempt: false, createdAt: T0 }),
        ).rejects.toThrow()
      })

      it('stores keys by hash, revokes once and records use', async () => {
        const key = {
          id: uid('key'),
          accountId: acc,
          name: null,
          hash: randomUUID(),
          prefix: 'hk_ab',
          permission: 'RESTRICTED' as const,
          endpointIds: ['e1', 'e2'],
          admin: false,
          expiresAt: null,
          revokedAt: null,
          lastUsedAt: null,
          createdAt: T0,
        }
        await store.apiKeys.insert(key)
        expect(await store.apiKeys.findByHash(key.hash)).toEqual(key)
        expect(await store.apiKeys.list(acc)).toEqual([key])
        expect((await store.apiKeys.list()).some((k) => k.id === key.id)).toBe(true)
        expect(await store.apiKeys.revoke(key.id, at(5))).toBe(true)
        expect(await store.apiKeys.revoke(key.id, at(6))).toBe(false)
        await store.apiKeys.touch(key.id, at(7))
        expect(await store.apiKeys.get(key.id)).toEqual({ ...key, revokedAt: at(5), lastUsedAt: at(7) })
      })
    })

    describe('account quotas', () => {
      it('keeps one record per account: put replaces, nulls stay null, delete says whether there was one', async () => {
        expect(await store.quotas.get(acc)).toBeUndefined()
        const q = {
          accountId: acc,
          gpus: 2,
          workers: 5,
          pods: null,
          networkVolumeGb: 100,
          spendPerHourMicros: 1_500_000,
          // Beyond 2^31: BIGINT on PostgreSQL, read back as a number.
          spendPerMonthMicros: 5_000_000_000,
          atSpendLimit: 'FINISH' as const,
          guaranteedGpus: 1,
          weight: 3,
          updatedAt: T0,
        }
        await store.quotas.put(q)
        expect(await store.quotas.get(acc)).toEqual(q)
        const changed = { ...q, gpus: null, atSpendLimit: 'STOP' as const, weight: 1, updatedAt: at(2) }
        await store.quotas.put(changed)
        await store.quotas.put({ ...q, accountId: other })
        expect(await store.quotas.get(acc)).toEqual(changed)
        expect((await store.quotas.list()).filter((r) => r.accountId === acc || r.accountId === other)).toEqual(
          [changed, { ...q, accountId: other }].sort((a, b) => (a.accountId < b.accountId ? -1 : 1)),
        )
        await expect(store.quotas.put({ ...q, accountId: 'no-such-account' })).rejects.toThrow()
        await expect(
          store.transaction(async (tx) => {
            await tx.quotas.put({ ...q, gpus: 9 })
            throw new Error('undo')
          }),
        ).rejects.toThrow('undo')
        expect((await store.quotas.get(acc))?.gpus).toBeNull()
        expect(await store.quotas.delete(other)).toBe(true)
        expect(await store.quotas.delete(other)).toBe(false)
        expect(await store.quotas.get(other)).toBeUndefined()
      })
    })

    describe('owned collections', () => {
      const cases: Array<
        [
          string,
          (s: Store) => OwnedCollection<Owned>,
          (accountId: string, i: number) => Owned & { name: string | null },
        ]
      > = [
        [
          'templates',
          (s) => s.templates as OwnedCollection<Owned>,
          (a, i) => template(a, { name: `t${i}`, createdAt: at(i) }),
        ],
        [
          'registries',
          (s) => s.registries as OwnedCollection<Owned>,
          (a, i): RegistryRecord => ({
            id: uid('reg'),
            accountId: a,
            createdAt: at(i),
            name: `r${i}`,
            username: 'sealed-u',
            password: 'sealed-p',
          }),
        ],
        [
          'delegations',
          (s) => s.delegations as OwnedCollection<Owned>,
          (a, i): DelegationRecord => ({
            id: uid('dlg'),
            accountId: a,
            createdAt: at(i),
            name: null,
            delegatorUserId: a,
            awsUser: '123',
            repository: 'r',
            tag: 'latest',
            awsRegion: 'eu-west-1',
            dockerRegistryUri: 'x.dkr.ecr',
          }),
        ],
        [
          'networkVolumes',
          (s) => s.networkVolumes as OwnedCollection<Owned>,
          (a, i): NetworkVolumeRecord => ({
            id: uid('vol'),
            accountId: a,
            createdAt: at(i),
            name: `v${i}`,
            size: 10 + i,
            dataCenter: 'DC-1',
            type: 'STANDARD',
          }),
        ],
        [
          'endpoints',
          (s) => s.endpoints as OwnedCollection<Owned>,
          (a, i) => endpoint(a, { name: `e${i}`, createdAt: at(i) }),
        ],
        [
          'secrets',
          (s) => s.secrets as OwnedCollection<Owned>,
          (a, i): SecretRecord => ({
            id: uid('sec'),
            accountId: a,
            createdAt: at(i),
            name: `s${i}`,
            description: '',
            value: 'v1:sealed',
            updatedAt: at(i),
            version: 1,
          }),
        ],
      ]
      for (const [kind, of, make] of cases) {
        it(`${kind}: insert, get, list oldest first per account, update, delete`, async () => {
          const c = of(store)
          const a = uid('acc')
          await store.accounts.insert({ id: a, name: a, rateLimitExempt: false, createdAt: T0 })
          const [r1, r2, foreign] = [make(a, 1), make(a, 2), make(acc, 3)]
          await c.insert(r1)
          await c.insert(r2)
          await c.insert(foreign)
          await expect(c.insert(r1)).rejects.toThrow()
          expect(await c.get(r1.id)).toEqual(r1)
          expect(await c.list(a)).toEqual([r1, r2])
          const changed = { ...r1, name: 'renamed' }
          expect(await c.update(changed)).toBe(true)
          expect(await c.get(r1.id)).toEqual(changed)
          expect(await c.update({ ...r1, id: 'missing' })).toBe(false)
          expect(await c.delete(r1.id)).toBe(true)
          expect(await c.delete(r1.id)).toBe(false)
          expect(await c.get(r1.id)).toBeUndefined()
          expect(await c.list(a)).toEqual([r2])
        })
      }

      it('templates: public ones of every account, and clearing a deleted registry', async () => {
        const mine = template(acc, { public: true, registry: 'reg_x' })
        const theirs = template(other, { public: true, registry: 'reg_x' })
        const priv = template(acc, { registry: 'reg_x' })
        for (const t of [mine, theirs, priv]) await store.templates.insert(t)
        const pub = (await store.templates.listPublic()).map((t) => t.id)
        expect(pub).toEqual(expect.arrayContaining([mine.id, theirs.id]))
        expect(pub).not.toContain(priv.id)
        await store.templates.update({ ...mine, public: false })
        expect((await store.templates.listPublic()).map((t) => t.id)).not.toContain(mine.id)
        expect(await store.templates.clearRegistry(acc, 'reg_x')).toBe(2)
        expect((await store.templates.get(priv.id))?.registry).toBeNull()
        expect((await store.templates.get(theirs.id))?.registry).toBe('reg_x')
      })

      it('endpoints: which of an account hold a template, a registry or a volume; all of every account', async () => {
        const vol = uid('vol')
        const e1 = endpoint(acc, { templateId: 'tpl_1', networkVolumes: ['vol_other', vol] })
        const e2 = endpoint(acc, { registry: 'reg_1', createdAt: at(1) })
        const e3 = endpoint(other, { templateId: 'tpl_1', registry: 'reg_1', networkVolumes: [vol] })
        for (const e of [e1, e2, e3]) await store.endpoints.insert(e)
        expect(await store.endpoints.referencing(acc, { templateId: 'tpl_1' })).toEqual([e1.id])
        expect(await store.endpoints.referencing(acc, { registryId: 'reg_1' })).toEqual([e2.id])
        expect(await store.endpoints.referencing(acc, { networkVolumeId: vol })).toEqual([e1.id])
        expect(await store.endpoints.referencing(other, { networkVolumeId: vol })).toEqual([e3.id])
        expect(await store.endpoints.referencing(acc, { networkVolumeId: 'vol' })).toEqual([])
        const all = (await store.endpoints.listAll()).map((e) => e.id)
        expect(all).toEqual(expect.arrayContaining([e1.id, e2.id, e3.id]))
      })

      it('releases: per endpoint, oldest first; deleted with it', async () => {
        const ep = uid('ep')
        const rel = (v: number): ReleaseRecord => ({
          id: uid('rel'),
          accountId: acc,
          endpointId: ep,
          version: v,
          source: 'MANUAL',
          buildId: null,
          createdByUserId: acc,
          createdAt: at(v),
          workerCount: 0,
          diff: [{ field: 'image', old: null, new: 'x' }],
        })
        const [r1, r2] = [rel(1), rel(2)]
        await store.releases.insert(r1)
        await store.releases.insert(r2)
        await store.releases.insert({ ...rel(1), endpointId: 'ep_other' })
        expect(await store.releases.listByEndpoint(ep)).toEqual([r1, r2])
        expect(await store.releases.deleteByEndpoint(ep)).toBe(2)
        expect(await store.releases.listByEndpoint(ep)).toEqual([])
      })

      it('ssh keys: one record per account, replaced whole', async () => {
        expect(await store.sshKeys.get(other)).toBeUndefined()
        await store.sshKeys.put({ id: other, accountId: other, createdAt: T0, keys: ['ssh-ed25519 A'] })
        await store.sshKeys.put({ id: other, accountId: other, createdAt: T0, keys: ['ssh-ed25519 B', 'ssh-rsa C'] })
        expect(await store.sshKeys.get(other)).toEqual({
          id: other,
          accountId: other,
          createdAt: T0,
          keys: ['ssh-ed25519 B', 'ssh-rsa C'],
        })
      })
    })

    describe('transactions', () => {
      it('commits every write made through the handle, and reads its own writes', async () => {
        const e = endpoint(acc)
        const seen = await store.transaction(async (tx) => {
          await tx.endpoints.insert(e)
          await tx.releases.insert({
            id: uid('rel'),
            accountId: acc,
            endpointId: e.id,
            version: 1,
            source: 'MANUAL',
            buildId: null,
            createdByUserId: acc,
            createdAt: T0,
            workerCount: 0,
            diff: [],
          })
          return tx.endpoints.get(e.id)
        })
        expect(seen).toEqual(e)
        expect(await store.endpoints.get(e.id)).toEqual(e)
        expect(await store.releases.listByEndpoint(e.id)).toHaveLength(1)
      })

      it('rolls back every write, jobs included, when the callback throws, and rethrows', async () => {
        const e = endpoint(acc)
        const ep = uid('ep')
        await expect(
          store.transaction(async (tx) => {
            await tx.endpoints.insert(e)
            await tx.jobs.insert(job(ep))
            await tx.templates.insert(template(acc))
            throw new Error('changed my mind')
          }),
        ).rejects.toThrow('changed my mind')
        expect(await store.endpoints.get(e.id)).toBeUndefined()
        expect((await store.jobs.counts(ep)).inQueue).toBe(0)
        expect(await store.jobs.take(ep, 'w', 5, 2_000)).toEqual([])
      })

      it('runs concurrent read-modify-write transactions as if one after another', async () => {
        const a = uid('acc')
        await store.accounts.insert({ id: a, name: a, rateLimitExempt: false, createdAt: T0 })
        await store.sshKeys.put({ id: a, accountId: a, createdAt: T0, keys: [] })
        await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            store.transaction(async (tx) => {
              const cur = (await tx.sshKeys.get(a))!
              await tx.sshKeys.put({ ...cur, keys: [...cur.keys, `k${i}`] })
            }),
          ),
        )
        expect((await store.sshKeys.get(a))?.keys.sort()).toEqual(Array.from({ length: 8 }, (_, i) => `k${i}`).sort())
      })

      it('keeps writes from outside the transaction out of it', async () => {
        const inside = endpoint(acc)
        const outside = endpoint(acc)
        let outsideWrite: Promise<void> | undefined
        await expect(
          store.transaction(async (tx) => {
            await tx.endpoints.insert(inside)
            outsideWrite = store.endpoints.insert(outside)
            // Give the outside write every chance to run before the rollback.
            await new Promise((r) => setTimeout(r, 20))
            throw new Error('rollback')
          }),
        ).rejects.toThrow('rollback')
        await outsideWrite
        expect(await store.endpoints.get(inside.id)).toBeUndefined()
        expect(await store.endpoints.get(outside.id)).toEqual(outside)
      })
    })

    describe('jobs', () => {
      it('keeps every field, an undefined output apart from a null one', async () => {
        const ep = uid('ep')
        const full = job(ep, {
          webhook: 'http://x/h',
          policy: { ttl: 5 },
          s3Config: { bucket: 'b' },
          sync: true,
          lowPriority: true,
          output: null,
          progress: { p: 1 },
        })
        await store.jobs.insert(full)
        expect(plain(await store.jobs.get(full.id, { input: true }))).toEqual(full)
        // Without asking for it, the input stays in the store.
        expect((await store.jobs.get(full.id))?.input).toBeUndefined()
        const bare = job(ep)
        await store.jobs.insert(bare)
        const got = plain(await store.jobs.get(bare.id, { input: true }))
        expect(got).toEqual(bare)
        expect('output' in got! ? got.output : 'absent').toBeUndefined()
        await expect(store.jobs.insert(bare)).rejects.toThrow()
      })

      it('hands out normal priority first, in submission order, skipping expired jobs', async () => {
        const ep = uid('ep')
        const ids: string[] = []
        for (let i = 0; i < 6; i++) {
          const j = job(ep, { createdAt: 1_000 + i, lowPriority: i % 3 === 0, expiresAt: i === 4 ? 1_500 : 10_000_000 })
          ids.push(j.id)
          await store.jobs.insert(j)
        }
        const taken = await store.jobs.take(ep, 'w1', 4, 2_000)
        expect(taken.map((j) => j.id)).toEqual([ids[1], ids[2], ids[5], ids[0]])
        // A take answers what the worker receives; the rows hold the move.
        expect(taken.map((j) => Object.keys(j).sort())).toEqual(
          taken.map(() => ['id', 'input', 'policy', 's3Config', 'webhook']),
        )
        expect(taken.map((j) => jsonValue(j.input))).toEqual(taken.map((j) => ({ id: j.id, nested: [1, 'two', null] })))
        for (const j of taken)
          expect(await store.jobs.get(j.id)).toMatchObject({ status: 'IN_PROGRESS', workerId: 'w1', startedAt: 2_000 })
        expect((await store.jobs.take(ep, 'w2', 4, 2_000)).map((j) => j.id)).toEqual([ids[3]])
        expect((await store.jobs.listInProgress('w1')).map((j) => j.id).sort()).toEqual(
          [ids[0], ids[1], ids[2], ids[5]].sort(),
        )
      })

      it('hands out one job at a time in the same order (a take of at most 1)', async () => {
        const ep = uid('ep')
        const ids: string[] = []
        for (let i = 0; i < 4; i++) {
          const j = job(ep, { createdAt: 1_000 + i, lowPriority: i === 0, expiresAt: i === 2 ? 1_500 : 10_000_000 })
          ids.push(j.id)
          await store.jobs.insert(j)
        }
        const taken: string[] = []
        for (let i = 0; i < 4; i++) taken.push(...(await store.jobs.take(ep, 'w1', 1, 2_000)).map((j) => j.id))
        expect(taken).toEqual([ids[1], ids[3], ids[0]])
        expect(await store.jobs.counts(ep)).toMatchObject({ inQueue: 1, inProgress: 3 })
      })

      it('lists the latest jobs of one endpoint, newest submission first', async () => {
        const ep = uid('ep')
        const ids: string[] = []
        for (let i = 0; i < 4; i++) {
          const j = job(ep, { createdAt: 1_000 + i })
          ids.push(j.id)
          await store.jobs.insert(j)
        }
        await store.jobs.insert(job(uid('ep'), { createdAt: 2_000 }))
        expect((await store.jobs.listRecent(ep, 3)).map((j) => j.id)).toEqual([ids[3], ids[2], ids[1]])
        expect(await store.jobs.listRecent(uid('ep'), 3)).toEqual([])
      })

      it('never hands one job to two takers', async () => {
        const ep = uid('ep')
        for (let i = 0; i < 30; i++) await store.jobs.insert(job(ep, { createdAt: 1_000 + i }))
        const batches = await Promise.all(Array.from({ length: 12 }, (_, i) => store.jobs.take(ep, `w${i}`, 3, 2_000)))
        const all = batches.flat().map((j) => j.id)
        expect(all).toHaveLength(30)
        expect(new Set(all).size).toBe(30)
      })

      it('moves a job only from the named states (and worker), recording its webhook delivery with the move', async () => {
        const ep = uid('ep')
        const j = job(ep, { webhook: 'http://127.0.0.1:1/hook' })
        await store.jobs.insert(j)
        await store.jobs.take(ep, 'w1', 1, 2_000)
        expect(await store.jobs.transition(j.id, ['IN_PROGRESS'], { status: 'COMPLETED' }, 'w2')).toBeUndefined()
        expect(await store.jobs.transition(j.id, ['IN_QUEUE'], { status: 'COMPLETED' })).toBeUndefined()
        const delivery = (done: JobRecord): WebhookDelivery => ({
          id: uid('wh'),
          jobId: done.id,
          url: done.webhook!,
          payload: { id: done.id, status: done.status },
          state: 'PENDING',
          attempts: [],
          nextAttemptAt: 3_000,
          createdAt: 3_000,
        })
        const done = await store.jobs.transition(
          j.id,
          ['IN_PROGRESS'],
          { status: 'COMPLETED', output: { ok: true }, completedAt: 3_000, retainFrom: 3_000 },
          'w1',
          delivery,
        )
        expect(plain(done)).toMatchObject({
          status: 'COMPLETED',
          output: { ok: true },
          completedAt: 3_000,
          retainUntil: 3_000 + j.retentionMs,
        })
        expect(await store.webhooks.listForJob(j.id)).toEqual([
          expect.objectContaining({ jobId: j.id, payload: { id: j.id, status: 'COMPLETED' }, state: 'PENDING' }),
        ])
        // Retry: back to the end of the queue, output and stream cleared.
        await store.jobs.appendChunks(j.id, ['a'])
        const again = await store.jobs.transition(j.id, ['COMPLETED', 'FAILED'], {
          status: 'IN_QUEUE',
          output: undefined,
          workerId: null,
          createdAt: 4_000,
          requeueAtEnd: true,
          clearStream: true,
          retries: 1,
        })
        expect(again).toMatchObject({ status: 'IN_QUEUE', workerId: null, retries: 1, createdAt: 4_000 })
        expect(again!.output).toBeUndefined()
        expect(await store.jobs.chunkCount(j.id)).toBe(0)
      })

      it('counts jobs per endpoint through every kind of move', async () => {
        const ep = uid('ep')
        const js = Array.from({ length: 8 }, (_, i) =>
          job(ep, { createdAt: 1_000 + i, lowPriority: i === 0, retries: i === 7 ? 2 : 0 }),
        )
        for (const j of js) await store.jobs.insert(j)
        await store.jobs.take(ep, 'w1', 3, 2_000) // js 1, 2, 3
        await store.jobs.transition(js[1].id, ['IN_PROGRESS'], { status: 'COMPLETED', completedAt: 3_000 }, 'w1')
        await store.jobs.transition(js[2].id, ['IN_PROGRESS'], { status: 'FAILED', completedAt: 3_000 }, 'w1')
        await store.jobs.transition(js[4].id, ['IN_QUEUE', 'IN_PROGRESS'], { status: 'CANCELLED', completedAt: 3_000 })
        await store.jobs.transition(
          js[3].id,
          ['IN_PROGRESS'],
          { status: 'IN_QUEUE', workerId: null, startedAt: null, retries: 1 },
          'w1',
        )
        await store.jobs.delete(js[5].id)
        expect(await store.jobs.counts(ep)).toEqual({
          inQueue: 4,
          inQueueLow: 1,
          inProgress: 0,
          completed: 1,
          failed: 1,
          retried: 3,
          oldestQueuedAt: 1_003,
        })
        expect((await store.jobs.activeEndpoints()).find((e) => e.endpointId === ep)).toEqual({
          endpointId: ep,
          ...(await store.jobs.counts(ep)),
        })
        expect(await store.jobs.purgeQueued(ep)).toBe(4)
        expect(await store.jobs.counts(ep)).toEqual({
          inQueue: 0,
          inQueueLow: 0,
          inProgress: 0,
          completed: 1,
          failed: 1,
          retried: 0,
          oldestQueuedAt: null,
        })
        expect((await store.jobs.activeEndpoints()).find((e) => e.endpointId === ep)).toBeUndefined()
      })

      it('finds expired and timed-out jobs', async () => {
        const ep = uid('ep')
        const ttl = job(ep, { expiresAt: 5_000 })
        const kept = job(ep, { status: 'COMPLETED', retainUntil: 6_000 })
        const slow = job(ep, { executionTimeoutMs: 1_000 })
        for (const j of [ttl, kept, slow]) await store.jobs.insert(j)
        await store.jobs.take(ep, 'w1', 5, 2_000)
        const expired = (await store.jobs.listExpired(6_000, 1_000)).map((j) => j.id)
        expect(expired).toEqual(expect.arrayContaining([ttl.id, kept.id]))
        expect(expired).not.toContain(slow.id)
        expect((await store.jobs.listExpired(6_000, 1)).length).toBe(1)
        expect((await store.jobs.listTimedOut(3_000, 1_000)).map((j) => j.id)).toContain(slow.id)
        expect((await store.jobs.listTimedOut(2_999, 1_000)).map((j) => j.id)).not.toContain(slow.id)
      })

      it('streams chunks in order, each once, and the final output once for a job that never streamed', async () => {
        const ep = uid('ep')
        const [s, f] = [job(ep), job(ep, { status: 'COMPLETED', output: 'done' })]
        await store.jobs.insert(s)
        await store.jobs.insert(f)
        await store.jobs.appendChunks(s.id, [1, { two: 2 }])
        await store.jobs.appendChunks(s.id, ['three'])
        expect(await store.jobs.readNewChunks(s.id, 2)).toEqual([1, { two: 2 }])
        expect(await store.jobs.readNewChunks(s.id, 10)).toEqual(['three'])
        expect(await store.jobs.readNewChunks(s.id, 10)).toEqual([])
        expect(await store.jobs.chunkCount(s.id)).toBe(3)
        expect(await store.jobs.claimFinalOutput(s.id)).toBe(false)
        expect(await store.jobs.claimFinalOutput(f.id)).toBe(true)
        expect(await store.jobs.claimFinalOutput(f.id)).toBe(false)
        expect(await store.jobs.delete(s.id)).toBe(true)
        expect(await store.jobs.chunkCount(s.id)).toBe(0)
      })

      it('claims an idempotency key with its job once, per endpoint, until the key expires', async () => {
        const ep = uid('ep')
        const first = job(ep, { createdAt: 1_000 })
        expect(await store.jobs.insertIdempotent(first, { key: 'k', fingerprint: 'f1', expiresAt: 5_000 })).toEqual({
          inserted: true,
        })
        const dup = job(ep, { createdAt: 2_000 })
        expect(await store.jobs.insertIdempotent(dup, { key: 'k', fingerprint: 'f2', expiresAt: 6_000 })).toEqual({
          inserted: false,
          jobId: first.id,
          fingerprint: 'f1',
        })
        expect(await store.jobs.get(dup.id)).toBeUndefined()
        // The key is the endpoint's: another endpoint's claim of it is its own.
        const elsewhere = job(uid('ep'), { createdAt: 2_000 })
        expect(await store.jobs.insertIdempotent(elsewhere, { key: 'k', fingerprint: 'f1', expiresAt: 6_000 })).toEqual(
          { inserted: true },
        )
        // Once the window ended, the key is claimed afresh.
        const later = job(ep, { createdAt: 5_000 })
        expect(await store.jobs.insertIdempotent(later, { key: 'k', fingerprint: 'f3', expiresAt: 9_000 })).toEqual({
          inserted: true,
        })
        expect((await store.jobs.get(later.id))?.status).toBe('IN_QUEUE')
        expect(await store.jobs.sweepIdempotencyKeys(6_000, 100)).toBeGreaterThanOrEqual(1)
        expect(
          await store.jobs.insertIdempotent(job(ep, { createdAt: 6_500 }), {
            key: 'k',
            fingerprint: 'f4',
            expiresAt: 10_000,
          }),
        ).toEqual({ inserted: false, jobId: later.id, fingerprint: 'f3' })
      })
    })

    describe('workers and webhooks', () => {
      it('workers: update, active and recent lists', async () => {
        const ep = uid('ep')
        const [w1, w2] = [worker(ep, { createdAt: 1 }), worker(ep, { createdAt: 2 })]
        await store.workers.insert(w1)
        await store.workers.insert(w2)
        await store.workers.update(w1.id, { state: 'READY', startedAt: 10 })
        await store.workers.update(w2.id, { state: 'FAILED', stoppedAt: 20, lastError: 'boom' })
        expect(await store.workers.get(w1.id)).toEqual({ ...w1, state: 'READY', startedAt: 10 })
        expect((await store.workers.listActive(ep)).map((w) => w.id)).toEqual([w1.id])
        expect((await store.workers.listActive()).map((w) => w.id)).toContain(w1.id)
        expect((await store.workers.listRecent(ep, 5)).map((w) => w.id)).toEqual([w2.id, w1.id])
      })

      it('webhooks: due in order, attempts appended, the next due time', async () => {
        const jobId = uid('job')
        const d = (i: number): WebhookDelivery => ({
          id: uid('wh'),
          jobId,
          url: 'http://x',
          payload: { i },
          state: 'PENDING',
          attempts: [],
          nextAttemptAt: 100_000 + i,
          createdAt: i,
        })
        const [a, b] = [d(2), d(1)]
        await store.webhooks.insert(a)
        await store.webhooks.insert(b)
        const due = (await store.webhooks.due(100_002, 1_000)).filter((x) => x.jobId === jobId).map((x) => x.id)
        expect(due).toEqual([b.id, a.id])
        expect(await store.webhooks.nextDueAt()).toBeLessThanOrEqual(100_001)
        await store.webhooks.recordAttempt(
          b.id,
          { at: 1, statusCode: 500, error: null, durationMs: 3 },
          { state: 'PENDING', nextAttemptAt: 200_000 },
        )
        await store.webhooks.recordAttempt(
          b.id,
          { at: 2, statusCode: 200, error: null, durationMs: 4 },
          { state: 'DELIVERED', nextAttemptAt: null },
        )
        const [got] = (await store.webhooks.listForJob(jobId)).filter((x) => x.id === b.id)
        expect(got).toMatchObject({
          state: 'DELIVERED',
          nextAttemptAt: null,
          attempts: [
            { at: 1, statusCode: 500 },
            { at: 2, statusCode: 200 },
          ],
        })
      })
    })

    describe('pods', () => {
      it('round-trips a pod, lists by account and cluster, hides cluster members unless asked', async () => {
        const a = pod(acc)
        const member = pod(acc, { cluster: { id: uid('cl'), rank: 0 }, status: 'EXITED' })
        const foreign = pod(other)
        for (const p of [a, member, foreign]) await store.pods.insert(p)
        expect(await store.pods.get(a.id)).toEqual(a)
        expect((await store.pods.list({ accountId: acc })).map((p) => p.id)).toEqual([a.id])
        expect((await store.pods.list({ accountId: acc, includeClusterPods: true })).map((p) => p.id)).toEqual([
          a.id,
          member.id,
        ])
        expect((await store.pods.list({ clusterId: member.cluster!.id })).map((p) => p.id)).toEqual([member.id])
        const holding = (await store.pods.listHoldingCapacity()).map((p) => p.id)
        expect(holding).toContain(a.id)
        expect(holding).not.toContain(member.id)
        expect(await store.pods.update({ ...a, status: 'EXITED', runtimeRef: null })).toBe(true)
        expect((await store.pods.listHoldingCapacity()).map((p) => p.id)).not.toContain(a.id)
        expect(await store.pods.get(a.id)).toMatchObject({ status: 'EXITED', runtimeRef: null })
        expect(await store.pods.delete(a.id)).toBe(true)
        expect(await store.pods.get(a.id)).toBeUndefined()
        expect(await store.pods.update(a)).toBe(false)
      })

      it('writes pods inside a transaction, or not at all', async () => {
        const p = pod(acc)
        await expect(
          store.transaction(async (tx) => {
            await tx.pods.insert(p)
            throw new Error('roll back')
          }),
        ).rejects.toThrow('roll back')
        expect(await store.pods.get(p.id)).toBeUndefined()
        await store.transaction((tx) => tx.pods.insert(p))
        expect(await store.pods.get(p.id)).toEqual(p)
      })
    })
    usageCases(() => store)
    metricCases(() => store)
    auditCases(() => store)
    memberCases(() => store)
  })
}
