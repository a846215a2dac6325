import pg from 'pg'

/** The test database (CI and this machine: trust auth on 127.0.0.1). */
export const TEST_DATABASE_URL = process.env.HANGAR_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/**
 * Whether the test PostgreSQL answers. When it does not, a suite skips with the reason printed, unless
 * HANGAR_REQUIRE_POSTGRES=1 (CI), where that is a failure.
 */
export async function postgresReachable(suite: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 2000 })
  try {
    await c.connect()
    await c.query('SELECT 1')
    return true
  } catch (err) {
    const why = `PostgreSQL at ${TEST_DATABASE_URL} is unreachable (${(err as Error).message})`
    if (process.env.HANGAR_REQUIRE_POSTGRES === '1') throw new Error(`${suite}: ${why}, and HANGAR_REQUIRE_POSTGRES=1`)
    console.warn(`${suite}: skipped: ${why}`)
    return false
  } finally {
    await c.end().catch(() => undefined)
  }
}
