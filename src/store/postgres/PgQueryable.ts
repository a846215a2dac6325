import pg from 'pg'

/** What every PostgreSQL collection runs its SQL on: the pool, or the client of an open transaction. */
export interface PgQueryable {
  query<R extends pg.QueryResultRow = Record<string, unknown>>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>
}

/**
 * Runs `fn` atomically: on the pool, in a transaction of its own on one client (READ COMMITTED: every
 * statement sees what committed before it); on a transaction's client, simply inside that transaction.
 */
export async function atomically<T>(q: PgQueryable, fn: (q: PgQueryable) => Promise<T>): Promise<T> {
  if (!(q instanceof pg.Pool)) return fn(q)
  const client = await q.connect()
  try {
    await client.query('BEGIN')
    const result = await fn(client)
    await client.query('COMMIT')
    return result
  } catch (err) {
    // A ROLLBACK that fails means the connection broke; the error that matters is the one rethrown below.
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    client.release()
  }
}

/** SQLSTATEs worth running a whole transaction again for: serialization failure, deadlock. */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code
  return code === '40001' || code === '40P01'
}
