import { describe, expect, it } from 'vitest'
import { Fleet } from '../src/catalog/Fleet.js'
import { silentLog } from '../src/services/log.js'
import { QuotaService } from '../src/services/accounts/QuotaService.js'
import { PgStore } from '../src/store/postgres/PgStore.js'
import { QuotaExceeded } from '../src/domain/quotas/quotas.js'
import { endpoint } from './contracts/store.js'
import { dropSchema, freshSchemaName, PG_TEST_URL, pgAvailableOrSkip } from './helpers/postgres.js'

const available = await pgAvailableOrSkip('the quota checks across PostgreSQL replicas')

describe.runIf(available)('quotas across PostgreSQL replicas', () => {
  it('lets only one of two replicas creating endpoints at once pass the last workers of the quota', async () => {
    const schema = freshSchemaName()
    // Two replicas: a store (pool) and a quota service each, on one database.
    const a = await PgStore.open({ url: PG_TEST_URL, schema })
    const b = await PgStore.open({ url: PG_TEST_URL, schema })
    try {
      const clock = { now: () => Date.now() }
      const quotas = (store: PgStore) =>
        new QuotaService({ store, clock, fleet: new Fleet([]), log: silentLog, checkIntervalMs: 1_000 })
      const [qa, qb] = [quotas(a), quotas(b)]
      await a.accounts.insert({ id: 'acc1', name: 'team', rateLimitExempt: false, createdAt: new Date().toISOString() })
      await qa.set('team', { workers: 3 })
      const create = (store: PgStore, q: QuotaService, name: string) =>
        store.transaction(async (tx) => {
          const ep = endpoint('acc1', { name, workers: { min: 0, max: 2, idleTimeout: 10 } })
          await q.admitEndpoint(tx, null, ep)
          await tx.endpoints.insert(ep)
        })
      for (let round = 0; round < 5; round++) {
        const results = await Promise.allSettled([create(a, qa, `a${round}`), create(b, qb, `b${round}`)])
        expect(results.filter((r) => r.status === 'fulfilled').length).toBe(1)
        const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
        expect(refused.reason).toBeInstanceOf(QuotaExceeded)
        expect((refused.reason as QuotaExceeded).breach).toEqual({ quota: 'workers', use: 2, requested: 2, limit: 3 })
        expect((await a.endpoints.list('acc1')).reduce((t, e) => t + e.workers.max, 0)).toBe(2)
        for (const e of await a.endpoints.list('acc1')) await a.endpoints.delete(e.id)
      }
    } finally {
      await a.close()
      await b.close()
      await dropSchema(schema)
    }
  }, 60_000)
})
