import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type pg from 'pg'

const DIR = new URL('./migrations/', import.meta.url)

/**
 * Applies the numbered `NNN_name.sql` files not applied yet to `schema` (created if missing) and returns
 * their file names. Everything runs in one transaction under a transaction-scoped advisory lock, so two
 * processes starting at once apply each migration once: the second waits, then finds nothing left to do.
 * PostgreSQL DDL is transactional, so a failing migration leaves the schema as it was.
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<string[]> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`hangar.migrate:${schema}`])
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`)
    await client.query(`SET LOCAL search_path TO ${quoteIdent(schema)}`)
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
    )
    const done = new Set(
      (await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    )
    const applied: string[] = []
    const dir = fileURLToPath(DIR)
    for (const file of readdirSync(dir)
      .filter((f) => /^\d+_.+\.sql$/.test(f))
      .sort()) {
      const version = Number(file.split('_')[0])
      if (done.has(version)) continue
      await client.query(readFileSync(join(dir, file), 'utf8'))
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
        version,
        file,
        new Date().toISOString(),
      ])
      applied.push(file)
    }
    await client.query('COMMIT')
    return applied
  } catch (err) {
    // A ROLLBACK that fails means the connection broke; the error that matters is the one rethrown below.
    await client.query('ROLLBACK').catch(() => {})
    throw err
  } finally {
    client.release()
  }
}

/** A schema name as an SQL identifier; names are checked against a plain pattern before they get here. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}
