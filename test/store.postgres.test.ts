import { readdirSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { createPool, PgStore } from '../src/store/postgres/PgStore.js'
import { migrate } from '../src/store/postgres/migrate.js'
import { storeContract, endpoint, job } from './contracts/store.js'
import { dropSchema, freshSchemaName, PG_TEST_URL, pgAvailableOrSkip } from './helpers/postgres.js'

const available = await pgAvailableOrSkip('the PostgreSQL store tests')

/** A store on a schema of its own, dropped on dispose. */
async function openFresh(poolSize?: number) {
  const schema = freshSchemaName()
  const store = await PgStore.open({ url: PG_TEST_URL, schema, poolSize })
  return {
    store,
    schema,
    async dispose() {
      await store.close()
      await dropSchema(schema)
    },
  }
}

if (available) {
  // The contract suite (usage ledger cases included), on one fresh schema.
  storeContract('postgres', () => openFresh())

  describe('PostgreSQL specifics', () => {
    it('never hands one job to two takers on different stores (SKIP LOCKED), each with its own pool', async () => {
      const a = await openFresh()
      const b = await PgStore.open({ url: PG_TEST_URL, schema: a.schema })
      try {
        const ep = 'ep_skip_locked'
        for (let i = 0; i < 200; i++) await a.store.jobs.insert(job(ep, { id: `job_${i}`, createdAt: 1_000 + i }))
        const takers = Array.from({ length: 16 }, (_, i) => (i % 2 ? a.store : b).jobs)
        const taken: string[] = []
        await Promise.all(
          takers.map(async (jobs, i) => {
            for (;;) {
              const got = await jobs.take(ep, `w${i}`, 3, 2_000)
              if (got.length === 0) return
              taken.push(...got.map((j) => j.id))
            }
          }),
        )
        expect(taken).toHaveLength(200)
        expect(new Set(taken).size).toBe(200)
        expect((await b.jobs.counts(ep)).inProgress).toBe(200)
      } finally {
        await b.close()
        await a.dispose()
      }
    })

    it('keeps job counts (job_counts rows, folded now and then) equal to counting the jobs, with folds on two stores at once', async () => {
      const a = await openFresh()
      const b = await PgStore.open({ url: PG_TEST_URL, schema: a.schema })
      try {
        const ep = 'ep_counts'
        await Promise.all(
          Array.from({ length: 120 }, (_, i) =>
            (i % 2 ? a.store : b).jobs.insert(
              job(ep, { id: `job_${i}`, createdAt: 1_000 + i, lowPriority: i % 5 === 0 }),
            ),
          ),
        )
        const taken = [...(await a.store.jobs.take(ep, 'w1', 30, 2_000)), ...(await b.jobs.take(ep, 'w2', 30, 2_000))]
        // One statement per job, and counts read (and folded) on both stores meanwhile.
        await Promise.all([
          ...taken.map((j, i) =>
            (i % 2 ? a.store : b).jobs.transition(
              j.id,
              ['IN_PROGRESS'],
              i % 3
                ? { status: 'COMPLETED', completedAt: 3_000 }
                : { status: 'FAILED', completedAt: 3_000, retries: 2 },
            ),
          ),
          ...Array.from({ length: 10 }, (_, i) => (i % 2 ? a.store : b).jobs.counts(ep)),
          ...Array.from({ length: 10 }, (_, i) => (i % 2 ? a.store : b).jobs.activeEndpoints()),
        ])
        // A job still waiting goes.
        expect(
          await a.store.jobs.delete(
            Array.from({ length: 120 }, (_, i) => `job_${i}`).find((id) => !taken.some((t) => t.id === id))!,
          ),
        ).toBe(true)
        const pool = createPool({ url: PG_TEST_URL, schema: a.schema }).pool
        try {
          const { rows } = await pool.query(
            `SELECT count(*) FILTER (WHERE status = 'IN_QUEUE') AS "inQueue", count(*) FILTER (WHERE status = 'IN_QUEUE' AND low_priority) AS "inQueueLow",
               count(*) FILTER (WHERE status = 'IN_PROGRESS') AS "inProgress", count(*) FILTER (WHERE status = 'COMPLETED') AS completed,
               count(*) FILTER (WHERE status IN ('FAILED', 'TIMED_OUT')) AS failed, coalesce(sum(retries), 0) AS retried FROM jobs WHERE endpoint_id = $1`,
            [ep],
          )
          const counted = { ...rows[0], oldestQueuedAt: expect.any(Number) }
          expect(await a.store.jobs.counts(ep)).toEqual(counted)
          expect(await b.jobs.counts(ep)).toEqual(counted)
          expect([counted.inQueue + counted.completed + counted.failed, counted.inProgress, counted.retried]).toEqual([
            119, 0, 40,
          ])
          expect(counted.inQueue).toBe(59)
          // Folded: an endpoint is summed from few rows once counts have been read.
          expect(
            Number((await pool.query('SELECT count(*) AS n FROM job_counts WHERE endpoint_id = $1', [ep])).rows[0].n),
          ).toBeLessThanOrEqual(40)
        } finally {
          await pool.end()
        }
      } finally {
        await b.close()
        await a.dispose()
      }
    })

    it('applies each migration once when two processes migrate one schema at once', async () => {
      const schema = freshSchemaName()
      const one = createPool({ url: PG_TEST_URL, schema })
      const two = createPool({ url: PG_TEST_URL, schema })
      try {
        const [x, y] = await Promise.all([migrate(one.pool, schema), migrate(two.pool, schema)])
        // One applied them all, the other found nothing to do.
        // Every file of the migrations folder, in order (the list grows with each team's migrations).
        const files = readdirSync(new URL('../src/store/postgres/migrations/', import.meta.url))
          .filter((f) => /^\d+_.+\.sql$/.test(f))
          .sort()
        expect(files.slice(0, 10).map((f) => f.slice(0, 3))).toEqual([
          '001',
          '002',
          '003',
          '010',
          '030',
          '040',
          '050',
          '060',
          '070',
          '080',
        ])
        expect([x.length, y.length].sort((p, q) => p - q)).toEqual([0, files.length])
        expect([...x, ...y]).toEqual(files)
        const { rows } = await one.pool.query('SELECT version FROM schema_migrations ORDER BY version')
        expect(rows.map((r) => r.version)).toEqual(files.map((f) => Number(f.split('_')[0])))
        expect(await migrate(one.pool, schema)).toEqual([])
      } finally {
        await one.pool.end()
        await two.pool.end()
        await dropSchema(schema)
      }
    })

    it('rolls a transaction back when its callback throws, and keeps what committed outside it', async () => {
      const s = await openFresh()
      try {
        const acc = 'acc_tx'
        await s.store.accounts.insert({
          id: acc,
          name: acc,
          rateLimitExempt: false,
          createdAt: '2026-01-01T00:00:00.000Z',
        })
        const e = endpoint(acc)
        await expect(
          s.store.transaction(async (tx) => {
            await tx.endpoints.insert(e)
            await tx.jobs.insert(job(e.id))
            expect(await tx.endpoints.get(e.id)).toEqual(e)
            // Not yet visible outside.
            expect(await s.store.endpoints.get(e.id)).toBeUndefined()
            throw new Error('no')
          }),
        ).rejects.toThrow('no')
        expect(await s.store.endpoints.get(e.id)).toBeUndefined()
        expect(await s.store.jobs.counts(e.id)).toMatchObject({ inQueue: 0 })
      } finally {
        await s.dispose()
      }
    })

    it('reports a failing job write to its caller alone when it shares a group commit', async () => {
      const s = await openFresh()
      try {
        const dup = job('ep_gc')
        await s.store.jobs.insert(dup)
        const others = Array.from({ length: 5 }, () => job('ep_gc'))
        const results = await Promise.allSettled([
          s.store.jobs.insert(dup),
          ...others.map((j) => s.store.jobs.insert(j)),
        ])
        expect(results.map((r) => r.status)).toEqual([
          'rejected',
          'fulfilled',
          'fulfilled',
          'fulfilled',
          'fulfilled',
          'fulfilled',
        ])
        expect((await s.store.jobs.counts('ep_gc')).inQueue).toBe(6)
      } finally {
        await s.dispose()
      }
    })

    it('lists every endpoint as last written by any replica, parsing again only what changed', async () => {
      const a = await openFresh()
      const b = await PgStore.open({ url: PG_TEST_URL, schema: a.schema })
      try {
        for (const id of ['acct_a', 'acct_b'])
          await a.store.accounts.insert({ id, name: id, rateLimitExempt: false, createdAt: '2026-11-01T00:00:00.000Z' })
        const [e1, e2, e3] = [
          endpoint('acct_a', { name: 'one' }),
          endpoint('acct_a', { name: 'two' }),
          endpoint('acct_b'),
        ]
        for (const e of [e1, e2, e3]) await a.store.endpoints.insert(e)
        const first = await a.store.endpoints.listAll()
        expect(first.map((e) => e.name)).toEqual(['one', 'two', 'e'])
        // Unchanged rows come back as the same (frozen) documents, not parsed again.
        const again = await a.store.endpoints.listAll()
        expect(again[0]).toBe(first[0])
        expect(Object.isFrozen(again[0])).toBe(true)
        // Written by the other replica: an update, a delete, an insert, and an update inside a transaction.
        await b.endpoints.update({ ...e2, name: 'two, renamed', version: 2 })
        await b.endpoints.delete(e3.id)
        const e4 = endpoint('acct_b', { name: 'four' })
        await b.endpoints.insert(e4)
        await b.transaction(async (tx) => {
          await tx.endpoints.update({ ...e1, name: 'one, first' })
          await tx.endpoints.update({ ...e1, name: 'one, second' })
        })
        const after = await a.store.endpoints.listAll()
        expect(after.map((e) => [e.id, e.name])).toEqual([
          [e1.id, 'one, second'],
          [e2.id, 'two, renamed'],
          [e4.id, 'four'],
        ])
      } finally {
        await b.close()
        await a.dispose()
      }
    })
  })
} else {
  describe.skip('PostgreSQL store (PostgreSQL unreachable)', () => {
    it('needs PostgreSQL', () => {})
  })
}
