import Database from 'better-sqlite3'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type pg from 'pg'
import { DataDirLock, DataDirLockedError } from '../DataDirLock.js'
import { createPool, pgTarget } from './postgres/PgStore.js'
import { migrate as migratePg, quoteIdent } from './postgres/migrate.js'

/** Where to copy from and to. */
export interface ImportOptions {
  /** The embedded install: its data dir, or its `hangar.db` file. */
  from: string
  /** The PostgreSQL target, as in `HANGAR_DATABASE_URL` (a `?schema=` parameter wins over `schema`). */
  url: string
  /** The target schema (default `public`). */
  schema?: string
  /** Delete what the target holds first, in the same transaction, instead of refusing. */
  force?: boolean
}

/** What `importFromSqlite` copied. */
export interface ImportReport {
  /** The SQLite file read. */
  source: string
  /** The target schema. */
  schema: string
  /** Migration files applied to the target before the copy. */
  migrated: string[]
  /** Rows copied per table, in the order they were copied. */
  tables: Array<{ table: string; rows: number }>
  /** Rows the target held and `force` deleted, per table (empty without `force`). */
  deleted: Array<{ table: string; rows: number }>
}

/** The source cannot be imported as it is (missing, not a Hangar database, another schema version, in use). */
export class ImportSourceError extends Error {}

/** The target already holds data and `force` was not given; nothing was changed. */
export class ImportTargetNotEmptyError extends Error {}

/** Bookkeeping tables each store keeps for itself: never copied, never compared. */
const OWN_TABLES = new Set(['schema_migrations'])

/** How rows are grouped into one INSERT (PostgreSQL takes at most 65,535 parameters per statement). */
const MAX_PARAMS = 30_000
const MAX_ROWS = 1_000

/**
 * Copies every table of an embedded SQLite install into a PostgreSQL schema, in one transaction, after
 * bringing that schema's migrations up to date. The copy is by table and column name, not through the store
 * port, so that nothing is left behind: every SQLite table must have its PostgreSQL counterpart with every
 * column, or the import refuses before writing anything (a migration added to one dialect only is found
 * here, not after a customer's data went missing). Values are converted by the target column's type
 * (0/1 to booleans, JSON text to jsonb); the sequences behind `seq` and identity columns are set past the
 * copied maximum, so the job queue keeps its order and new rows come after the old ones.
 *
 * The data dir is locked for the duration, so a `hangar serve` cannot write to the file meanwhile.
 *
 * @example
 * const report = await importFromSqlite({ from: '/var/lib/hangar', url: 'postgres://hangar@db/hangar' })
 */
export async function importFromSqlite(opts: ImportOptions): Promise<ImportReport> {
  const source = sourceFile(opts.from)
  const lock = acquireLock(dirname(source))
  try {
    const db = openSource(source)
    try {
      return await copy(db, source, opts)
    } finally {
      db.close()
    }
  } finally {
    lock.release()
  }
}

async function copy(db: Database.Database, source: string, opts: ImportOptions): Promise<ImportReport> {
  checkSourceVersion(db, source)
  const { pool, schema } = createPool({ url: opts.url, schema: opts.schema, poolSize: 1 })
  try {
    const migrated = await migratePg(pool, schema)
    const client = await pool.connect()
    try {
      await client.query('BEGIN')
      try {
        const report = await copyTables(db, client, schema, opts.force ?? false)
        await client.query('COMMIT')
        return { source, schema, migrated, ...report }
      } catch (err) {
        // A ROLLBACK that fails means the connection broke; the error that matters is the one rethrown below.
        await client.query('ROLLBACK').catch(() => {})
        throw err
      }
    } finally {
      client.release()
    }
  } finally {
    await pool.end()
  }
}

/** The column of a target table: its name and PostgreSQL type (`information_schema.columns.data_type`). */
interface TargetColumn {
  name: string
  type: string
}

async function copyTables(
  db: Database.Database,
  client: pg.PoolClient,
  schema: string,
  force: boolean,
): Promise<Omit<ImportReport, 'source' | 'schema' | 'migrated'>> {
  const target = await targetTables(client, schema)
  const sourceTables = (
    db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .all() as Array<{ name: string }>
  )
    .map((r) => r.name)
    .filter((t) => !OWN_TABLES.has(t))

  // Everything is checked before the first row is written.
  const problems: string[] = []
  for (const table of sourceTables) {
    const columns = target.get(table)
    if (!columns) {
      problems.push(`table ${table} has no counterpart in PostgreSQL schema ${schema}`)
      continue
    }
    const names = new Set(columns.map((c) => c.name))
    for (const col of sourceColumns(db, table))
      if (!names.has(col)) problems.push(`column ${table}.${col} has no counterpart in PostgreSQL schema ${schema}`)
  }
  if (problems.length > 0)
    throw new ImportSourceError(
      `this version of hangar does not know how to import every table of ${db.name}; nothing was copied:\n  ${problems.join('\n  ')}`,
    )

  const tables = [...target.keys()]
  // Replicas on the target wait until the copy commits (or rolls back): none writes between the check and the copy.
  if (tables.length > 0) await client.query(`LOCK TABLE ${tables.map(quoteIdent).join(', ')} IN ACCESS EXCLUSIVE MODE`)
  const held: Array<{ table: string; rows: number }> = []
  for (const table of tables) {
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${quoteIdent(table)}`)
    const n = Number(rows[0].n)
    if (n > 0) held.push({ table, rows: n })
  }
  if (held.length > 0 && !force) {
    throw new ImportTargetNotEmptyError(
      `PostgreSQL schema ${schema} already holds data (${held.map((h) => `${h.table}: ${h.rows}`).join(', ')}); nothing was copied. ` +
        'Import into an empty schema (HANGAR_DATABASE_SCHEMA or ?schema=), or pass --force to delete what it holds first',
    )
  }
  if (held.length > 0) await client.query(`TRUNCATE ${tables.map(quoteIdent).join(', ')}`)

  const copied: Array<{ table: string; rows: number }> = []
  for (const table of await insertOrder(client, schema, sourceTables)) {
    copied.push({ table, rows: await copyTable(db, client, table, target.get(table)!) })
  }
  await advanceSequences(client, schema)
  return { tables: copied, deleted: force ? held : [] }
}

/** Copies one table in batches of multi-row INSERTs; returns the number of rows. */
async function copyTable(
  db: Database.Database,
  client: pg.PoolClient,
  table: string,
  targetColumns: TargetColumn[],
): Promise<number> {
  const names = sourceColumns(db, table)
  const types = names.map((n) => targetColumns.find((c) => c.name === n)!.type)
  const perBatch = Math.max(1, Math.min(MAX_ROWS, Math.floor(MAX_PARAMS / names.length)))
  const head = `INSERT INTO ${quoteIdent(table)} (${names.map(quoteIdent).join(', ')}) VALUES `
  // Integers come as bigint, exact whatever their size, and go to PostgreSQL as text. Row order does not
  // matter: the order of the queue and of lists lives in the `seq` columns.
  const rows = db
    .prepare(`SELECT ${names.map(quoteIdent).join(', ')} FROM ${quoteIdent(table)}`)
    .raw(true)
    .safeIntegers(true)
    .iterate() as IterableIterator<unknown[]>
  let count = 0
  let batch: unknown[][] = []
  const flush = async () => {
    if (batch.length === 0) return
    const params: unknown[] = []
    const tuples = batch.map(
      (row) =>
        `(${row.map((v, i) => (params.push(toPg(v, types[i], table, names[i])), `$${params.length}`)).join(', ')})`,
    )
    await client.query(head + tuples.join(', '), params)
    count += batch.length
    batch = []
  }
  // The iterator holds the SQLite statement open: rows are collected per batch, the await happens between them.
  for (const row of rows) {
    batch.push(row)
    if (batch.length >= perBatch) await flush()
  }
  await flush()
  return count
}

/** A SQLite value for a PostgreSQL column of `type`. */
function toPg(v: unknown, type: string, table: string, column: string): unknown {
  if (v === null || v === undefined) return null
  if (type === 'boolean') {
    if (v === 0 || v === 1 || v === 0n || v === 1n) return v === 1 || v === 1n
    throw new ImportSourceError(`${table}.${column}: ${JSON.stringify(v)} is not a boolean (0 or 1)`)
  }
  if (Buffer.isBuffer(v)) {
    // SQLite keeps a JSON column's value as it came (its UTF-8 bytes, see SqliteJobStore); PostgreSQL keeps it as text.
    if (type === 'text' || type === 'json' || type === 'jsonb') return v.toString('utf8')
    throw new ImportSourceError(`${table}.${column}: holds a blob, which its PostgreSQL column (${type}) cannot take`)
  }
  // JSON text goes to json/jsonb as text (PostgreSQL parses it); numbers and text as they are.
  return typeof v === 'bigint' ? v.toString() : v
}

/** The target's tables (bookkeeping left out) with their columns. */
async function targetTables(client: pg.PoolClient, schema: string): Promise<Map<string, TargetColumn[]>> {
  const { rows } = await client.query<{ table_name: string; column_name: string; data_type: string }>(
    `SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE' ORDER BY c.table_name, c.ordinal_position`,
    [schema],
  )
  const tables = new Map<string, TargetColumn[]>()
  for (const r of rows) {
    if (OWN_TABLES.has(r.table_name)) continue
    const cols = tables.get(r.table_name) ?? []
    cols.push({ name: r.column_name, type: r.data_type })
    tables.set(r.table_name, cols)
  }
  return tables
}

/** `tables` ordered so that a table comes after those its foreign keys point to (accounts before api_keys). */
async function insertOrder(client: pg.PoolClient, schema: string, tables: string[]): Promise<string[]> {
  const { rows } = await client.query<{ child: string; parent: string }>(
    `SELECT c.relname AS child, p.relname AS parent FROM pg_constraint k
       JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class p ON p.oid = k.confrelid
       JOIN pg_namespace n ON n.oid = k.connamespace
      WHERE k.contype = 'f' AND n.nspname = $1`,
    [schema],
  )
  const order: string[] = []
  const visiting = new Set<string>()
  const visit = (t: string) => {
    if (order.includes(t) || visiting.has(t)) return
    visiting.add(t)
    for (const r of rows) if (r.child === t && r.parent !== t && tables.includes(r.parent)) visit(r.parent)
    visiting.delete(t)
    order.push(t)
  }
  for (const t of tables) visit(t)
  return order
}

/**
 * Sets every sequence behind a column default (`nextval('job_queue_seq')`) or an identity column past the
 * largest copied value: the next job queued goes behind the imported ones, the next document sorts last.
 */
async function advanceSequences(client: pg.PoolClient, schema: string): Promise<void> {
  const { rows } = await client.query<{ table_name: string; column_name: string; seq: string | null }>(
    `SELECT table_name, column_name,
            COALESCE(pg_get_serial_sequence(quote_ident(table_schema) || '.' || quote_ident(table_name), column_name),
                     substring(column_default FROM 'nextval\\(''([^'']+)''')) AS seq
       FROM information_schema.columns
      WHERE table_schema = $1 AND (is_identity = 'YES' OR column_default LIKE 'nextval(%')`,
    [schema],
  )
  for (const r of rows) {
    if (!r.seq) continue
    // setval(seq, 1, false): an empty table starts at 1, as a fresh schema would.
    await client.query(
      `SELECT setval($1::regclass, COALESCE((SELECT max(${quoteIdent(r.column_name)}) FROM ${quoteIdent(r.table_name)}), 1), (SELECT count(*) > 0 FROM ${quoteIdent(r.table_name)}))`,
      [r.seq],
    )
  }
}

function sourceColumns(db: Database.Database, table: string): string[] {
  return (db.prepare(`SELECT name FROM pragma_table_info(?) ORDER BY cid`).all(table) as Array<{ name: string }>).map(
    (r) => r.name,
  )
}

/** `hangar.db` in a data dir, or the file named. */
function sourceFile(from: string): string {
  if (!existsSync(from)) throw new ImportSourceError(`${from}: no such file or directory`)
  const file = statSync(from).isDirectory() ? join(from, 'hangar.db') : from
  if (!existsSync(file))
    throw new ImportSourceError(
      `${from} holds no hangar.db: pass the data dir of an embedded install, or its hangar.db`,
    )
  return file
}

function acquireLock(dataDir: string): DataDirLock {
  try {
    return DataDirLock.acquire(dataDir)
  } catch (err) {
    if (err instanceof DataDirLockedError)
      throw new ImportSourceError(`${err.message} (the import reads a stopped install)`)
    throw new ImportSourceError(
      `cannot lock ${dataDir} against a server starting during the import: ${(err as Error).message}`,
    )
  }
}

function openSource(file: string): Database.Database {
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true })
    db.prepare('SELECT count(*) FROM sqlite_master').get()
    return db
  } catch (err) {
    throw new ImportSourceError(`${file}: not a readable SQLite database: ${(err as Error).message}`)
  }
}

/**
 * The source must be at the migration level of this build, like the target after `migratePg`: same numbers,
 * same tables and columns. An older install is brought up first by `hangar migrate` on it; this import does
 * not write to the file it reads.
 */
function checkSourceVersion(db: Database.Database, file: string): void {
  const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get()
  if (!hasTable) throw new ImportSourceError(`${file} is not a Hangar database (it has no schema_migrations table)`)
  const have = new Set(
    (db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version),
  )
  const want = sqliteMigrationVersions()
  const missing = want.filter((v) => !have.has(v))
  const unknown = [...have].filter((v) => !want.includes(v))
  if (unknown.length > 0) {
    throw new ImportSourceError(
      `${file} was migrated by a newer Hangar (migrations ${unknown.join(', ')} are unknown to this one): import it with that version`,
    )
  }
  if (missing.length > 0) {
    throw new ImportSourceError(
      `${file} lacks migrations ${missing.join(', ')} of this Hangar: run \`hangar migrate --data-dir ${dirname(file)}\` without HANGAR_DATABASE_URL first, then import again`,
    )
  }
}

function sqliteMigrationVersions(): number[] {
  const dir = fileURLToPath(new URL('./sqlite/migrations/', import.meta.url))
  return readdirSync(dir)
    .filter((f) => /^\d+_.+\.sql$/.test(f))
    .map((f) => Number(f.split('_')[0]))
}

/** The target as people read it: host, database and schema, without credentials. */
export function describeTarget(url: string, schema?: string): string {
  const t = pgTarget({ url, schema })
  const u = new URL(t.url)
  return `${u.host}${u.pathname} schema ${t.schema}`
}
