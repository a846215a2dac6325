import { randomBytes } from 'node:crypto'
import pg from 'pg'

/** The PostgreSQL the tests use: HANGAR_TEST_DATABASE_URL, else the local `test` database. */
export const PG_TEST_URL = process.env.HANGAR_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** True when an unreachable PostgreSQL must fail the tests instead of skipping them (CI). */
export const PG_REQUIRED = process.env.HANGAR_REQUIRE_POSTGRES === '1'

/** Why PostgreSQL cannot be used, or null when it answers. */
export async function pgUnavailable(url = PG_TEST_URL): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 })
  try {
    await client.connect()
    await client.query('SELECT 1')
    return null
  } catch (err) {
    return `PostgreSQL at ${url.replace(/:[^:@/]*@/, ':***@')} is unreachable: ${(err as Error).message}`
  } finally {
    await client.end().catch(() => {})
  }
}

/**
 * Resolves to true when the PostgreSQL tests can run. When they cannot, prints why and resolves to false
 * (skip), or throws when HANGAR_REQUIRE_POSTGRES=1 (fail).
 */
export async function pgAvailableOrSkip(what: string): Promise<boolean> {
  const reason = await pgUnavailable()
  if (reason === null) return true
  if (PG_REQUIRED) throw new Error(`${reason} (HANGAR_REQUIRE_POSTGRES=1: ${what} must run)`)
  console.warn(`skipping ${what}: ${reason} (set HANGAR_REQUIRE_POSTGRES=1 to fail instead)`)
  return false
}

/** A schema name no other test run uses. */
export function freshSchemaName(prefix = 'hangar_t'): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`
}

/** Drops a test schema and everything in it. */
export async function dropSchema(schema: string, url = PG_TEST_URL): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  } finally {
    await client.end()
  }
}
