import pg from 'pg'
import { deepFreeze } from '../deepFreeze.js'
import type { Owned, OwnedCollection } from '../OwnedCollection.js'
import type { PgQueryable } from './PgQueryable.js'

type Waiter = { resolve: (data: string | undefined) => void; reject: (err: unknown) => void }

/**
 * One kind of owned resource as JSON documents in the shared `documents` table (see SqliteDocuments).
 * `parent_id` and `public` are the columns queries filter on besides the owner.
 */
export class PgDocuments<T extends Owned> implements OwnedCollection<T> {
  /**
   * With `parsedAll` (endpoints: every scaling pass lists them all), `listAll` keeps the documents it parsed with
   * the version of the row they came from (`xmin` and `ctid`, which every update of a row changes) and parses
   * again only rows written since, by any replica. Those documents are frozen: every caller gets the same object.
   */
  private readonly parsed: Map<string, { version: string; record: T }> | null

  constructor(
    protected readonly q: PgQueryable,
    protected readonly kind: string,
    private readonly parentOf: (record: T) => string | null = () => null,
    opts: { parsedAll?: boolean } = {},
  ) {
    this.parsed = opts.parsedAll && q instanceof pg.Pool ? new Map() : null
  }

  /** get() calls of this turn of the event loop, by id, read together (see get). */
  private gets: Map<string, Waiter[]> | null = null

  async insert(record: T): Promise<void> {
    await this.q.query(
      'INSERT INTO documents (kind, id, account_id, parent_id, public, data, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [
        this.kind,
        record.id,
        record.accountId,
        this.parentOf(record),
        isPublic(record),
        JSON.stringify(record),
        record.createdAt,
      ],
    )
  }

  /**
   * On the pool, the reads requested during one turn of the event loop go out as one query (every /run
   * reads its endpoint: a burst of submissions costs one round trip, not one each). The query is sent after
   * every call it answers was made, so each still sees what committed before it; each caller parses its own copy.
   */
  async get(id: string): Promise<T | undefined> {
    if (!(this.q instanceof pg.Pool)) {
      const { rows } = await this.q.query<{ data: string }>('SELECT data FROM documents WHERE kind = $1 AND id = $2', [
        this.kind,
        id,
      ])
      return rows.length ? (JSON.parse(rows[0].data) as T) : undefined
    }
    const data = await new Promise<string | undefined>((resolve, reject) => {
      if (!this.gets) {
        this.gets = new Map()
        setImmediate(() => void this.readGets())
      }
      const waiters = this.gets.get(id)
      if (waiters) waiters.push({ resolve, reject })
      else this.gets.set(id, [{ resolve, reject }])
    })
    return data === undefined ? undefined : (JSON.parse(data) as T)
  }

  private async readGets(): Promise<void> {
    const gets = this.gets!
    this.gets = null
    try {
      const ids = [...gets.keys()]
      const { rows } =
        ids.length === 1
          ? await this.q.query<{ id: string; data: string }>(
              'SELECT id, data FROM documents WHERE kind = $1 AND id = $2',
              [this.kind, ids[0]],
            )
          : await this.q.query<{ id: string; data: string }>(
              'SELECT id, data FROM documents WHERE kind = $1 AND id = ANY($2)',
              [this.kind, ids],
            )
      const found = new Map(rows.map((r) => [r.id, r.data]))
      for (const [id, waiters] of gets) for (const w of waiters) w.resolve(found.get(id))
    } catch (err) {
      for (const waiters of gets.values()) for (const w of waiters) w.reject(err)
    }
  }

  list(accountId: string): Promise<T[]> {
    return this.select('account_id = $2', accountId)
  }

  async update(record: T): Promise<boolean> {
    const r = await this.q.query(
      'UPDATE documents SET data = $3, public = $4, parent_id = $5 WHERE kind = $1 AND id = $2',
      [this.kind, record.id, JSON.stringify(record), isPublic(record), this.parentOf(record)],
    )
    return (r.rowCount ?? 0) > 0
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.q.query('DELETE FROM documents WHERE kind = $1 AND id = $2', [this.kind, id])
    return (r.rowCount ?? 0) > 0
  }

  async listAll(): Promise<T[]> {
    const parsed = this.parsed
    if (!parsed) return this.select('true')
    // The rows' versions first (a few bytes each); then the documents of those written since the last list.
    const { rows } = await this.q.query<{ id: string; v: string }>(
      `SELECT id, ${VERSION} AS v FROM documents WHERE kind = $1 ORDER BY seq`,
      [this.kind],
    )
    const stale = rows.filter((r) => parsed.get(r.id)?.version !== r.v).map((r) => r.id)
    if (stale.length > 0) {
      const { rows: docs } = await this.q.query<{ id: string; v: string; data: string }>(
        `SELECT id, ${VERSION} AS v, data FROM documents WHERE kind = $1 AND id = ANY($2)`,
        [this.kind, stale],
      )
      for (const d of docs) parsed.set(d.id, { version: d.v, record: deepFreeze(JSON.parse(d.data) as T) })
    }
    if (parsed.size > rows.length) {
      const ids = new Set(rows.map((r) => r.id))
      for (const id of parsed.keys()) if (!ids.has(id)) parsed.delete(id)
    }
    const out: T[] = []
    for (const r of rows) {
      const hit = parsed.get(r.id)
      // Absent: deleted between the two reads.
      if (hit) out.push(hit.record)
    }
    return out
  }

  listPublic(): Promise<T[]> {
    return this.select('public')
  }

  listByParent(parentId: string): Promise<T[]> {
    return this.select('parent_id = $2', parentId)
  }

  async deleteByParent(parentId: string): Promise<number> {
    const r = await this.q.query('DELETE FROM documents WHERE kind = $1 AND parent_id = $2', [this.kind, parentId])
    return r.rowCount ?? 0
  }

  /** Documents of this kind matching a condition (`$1` is the kind, `params` follow from `$2`), oldest first. */
  protected async select(where: string, ...params: unknown[]): Promise<T[]> {
    const { rows } = await this.q.query<{ data: string }>(
      `SELECT data FROM documents WHERE kind = $1 AND ${where} ORDER BY seq`,
      [this.kind, ...params],
    )
    return rows.map((r) => JSON.parse(r.data) as T)
  }
}

/** A row version's name: the transaction that wrote it and where it lies; an update changes both. */
const VERSION = "xmin::text || ':' || ctid::text"

function isPublic(record: Owned): boolean {
  return (record as { public?: unknown }).public === true
}
