import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { PgChangeFeed } from '../src/replicas/postgres/PgChangeFeed.js'
import { PgLeadership } from '../src/replicas/postgres/PgLeadership.js'
import { SoleChangeFeed } from '../src/replicas/SoleChangeFeed.js'
import { SoleLeadership } from '../src/replicas/SoleLeadership.js'
import { silentLog } from '../src/services/log.js'
import { replicasContract } from './contracts/replicas.js'
import { pgAvailableOrSkip, PG_TEST_URL } from './helpers/postgres.js'

replicasContract('sole process (SQLite)', async () => ({
  shared: false,
  installation: async () => ({ leadership: () => new SoleLeadership(), feed: () => new SoleChangeFeed() }),
}))

replicasContract('PostgreSQL (advisory lock, LISTEN/NOTIFY)', async () => {
  if (!(await pgAvailableOrSkip('the PostgreSQL leadership and change-feed contract'))) return null
  const schemas: string[] = []
  const sql = async (text: string) => {
    const c = new pg.Client({ connectionString: PG_TEST_URL })
    await c.connect()
    try {
      await c.query(text)
    } finally {
      await c.end()
    }
  }
  return {
    shared: true,
    // The namespace is the store's schema (the leader's address is kept in it): one of its own per installation.
    installation: async () => {
      const namespace = `hangar_t_${randomUUID().replace(/-/g, '').slice(0, 16)}`
      await sql(`CREATE SCHEMA ${namespace}`)
      schemas.push(namespace)
      return {
        leadership: () => new PgLeadership({ connectionString: PG_TEST_URL, namespace, log: silentLog, pollMs: 50 }),
        feed: () => new PgChangeFeed({ connectionString: PG_TEST_URL, namespace, log: silentLog, reconnectMs: 100 }),
      }
    },
    cleanup: async () => {
      for (const s of schemas.splice(0)) await sql(`DROP SCHEMA IF EXISTS ${s} CASCADE`)
    },
  }
})
