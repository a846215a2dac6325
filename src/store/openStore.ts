import Database from 'better-sqlite3'
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config.js'
import { createPool, pgTarget, PgStore } from './postgres/PgStore.js'
import { migrate as migratePg } from './postgres/migrate.js'
import { migrate as migrateSqlite } from './sqlite/migrate.js'
import { SqliteStore } from './sqlite/SqliteStore.js'
import type { Store } from './Store.js'

type StoreConfig = Pick<Config, 'databaseUrl' | 'databaseSchema'>

/**
 * The store the configuration asks for, schema brought up to date: PostgreSQL when `databaseUrl` is set,
 * else the embedded SQLite file `<dataDir>/hangar.db`. The adapter is chosen here, once.
 */
export async function openStore(config: StoreConfig, dataDir: string): Promise<Store> {
  if (config.databaseUrl) return PgStore.open({ url: config.databaseUrl, schema: config.databaseSchema })
  const file = join(dataDir, 'hangar.db')
  privateFiles(file)
  return new SqliteStore(file)
}

/**
 * Makes the database file and its companions owner-only (0600). SQLite creates its -wal and -shm files with
 * the database file's permissions, so creating that file 0600 before SQLite opens it covers them too;
 * files of an older data dir are tightened in place.
 */
function privateFiles(dbFile: string): void {
  if (!existsSync(dbFile)) closeSync(openSync(dbFile, 'a', 0o600))
  for (const f of [dbFile, `${dbFile}-wal`, `${dbFile}-shm`, `${dbFile}-journal`])
    if (existsSync(f)) chmodSync(f, 0o600)
}

/** What `migrateStore` did. */
export interface MigrationReport {
  dialect: Store['dialect']
  /** Where: the SQLite file, or the PostgreSQL database and schema (without credentials). */
  target: string
  /** Migration files applied now, in order; empty when the schema was up to date. */
  applied: string[]
}

/** Applies the pending migrations of the configured store without opening the rest of it (`hangar migrate`). */
export async function migrateStore(config: StoreConfig, dataDir: string): Promise<MigrationReport> {
  if (config.databaseUrl) {
    const { pool, schema } = createPool({ url: config.databaseUrl, schema: config.databaseSchema, poolSize: 1 })
    try {
      const u = new URL(pgTarget({ url: config.databaseUrl, schema: config.databaseSchema }).url)
      u.password = ''
      return {
        dialect: 'postgres',
        target: `${u.host}${u.pathname} schema ${schema}`,
        applied: await migratePg(pool, schema),
      }
    } finally {
      await pool.end()
    }
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const file = join(dataDir, 'hangar.db')
  const db = new Database(file)
  try {
    const applied = migrateSqlite(db)
    return { dialect: 'sqlite', target: file, applied: applied.map((v) => String(v).padStart(3, '0')) }
  } finally {
    db.close()
  }
}
