import type Database from 'better-sqlite3'
import { deepFreeze } from '../deepFreeze.js'
import type { Owned, OwnedCollection } from '../OwnedCollection.js'

/**
 * One kind of owned resource as JSON documents in the shared `documents` table: their shapes come from
 * contract/ and change more often than their access paths. `parent_id` and `public` are the columns
 * queries filter on besides the owner.
 */
export class SqliteDocuments<T extends Owned> implements OwnedCollection<T> {
  private readonly s
  /**
   * Parsed documents by id, for kinds read on every request (endpoints: each /run, each GET of one). Sound
   * because one process owns the file (DataDirLock) and every write of the table goes through this class:
   * a write drops its entry, a rolled-back transaction drops them all (`forgetCached`). Entries are frozen,
   * since every caller gets the same object.
   */
  private readonly cache: Map<string, T> | null

  constructor(
    protected readonly db: Database.Database,
    protected readonly kind: string,
    private readonly parentOf: (record: T) => string | null = () => null,
    opts: { cache?: boolean } = {},
  ) {
    this.cache = opts.cache ? new Map() : null
    this.s = {
      insert: db.prepare(
        `INSERT INTO documents (kind, id, account_id, parent_id, public, data, created_at, seq)
         VALUES (@kind, @id, @accountId, @parentId, @public, @data, @createdAt, (SELECT coalesce(max(seq), 0) + 1 FROM documents))`,
      ),
      get: db.prepare('SELECT data FROM documents WHERE kind = ? AND id = ?').pluck(),
      ofAccount: db.prepare('SELECT data FROM documents WHERE kind = ? AND account_id = ? ORDER BY seq').pluck(),
      ofParent: db.prepare('SELECT data FROM documents WHERE kind = ? AND parent_id = ? ORDER BY seq').pluck(),
      publicAll: db.prepare('SELECT data FROM documents WHERE kind = ? AND public = 1 ORDER BY seq').pluck(),
      all: db.prepare('SELECT data FROM documents WHERE kind = ? ORDER BY seq').pluck(),
      allIds: db.prepare('SELECT id FROM documents WHERE kind = ? ORDER BY seq').pluck(),
      update: db.prepare(
        'UPDATE documents SET data = @data, public = @public, parent_id = @parentId WHERE kind = @kind AND id = @id',
      ),
      delete: db.prepare('DELETE FROM documents WHERE kind = ? AND id = ?'),
      deleteOfParent: db.prepare('DELETE FROM documents WHERE kind = ? AND parent_id = ?'),
    }
  }

  async insert(record: T): Promise<void> {
    this.cache?.delete(record.id)
    this.s.insert.run(this.params(record))
  }

  async get(id: string): Promise<T | undefined> {
    return this.cached(id)
  }

  private cached(id: string): T | undefined {
    const hit = this.cache?.get(id)
    if (hit) return hit
    const data = this.s.get.get(this.kind, id) as string | undefined
    if (data === undefined) return undefined
    const record = JSON.parse(data) as T
    if (!this.cache) return record
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear()
    this.cache.set(id, deepFreeze(record))
    return record
  }

  /** Drops every cached document (their writes were rolled back). */
  forgetCached(): void {
    this.cache?.clear()
  }

  async list(accountId: string): Promise<T[]> {
    return this.parse(this.s.ofAccount.all(this.kind, accountId))
  }

  async update(record: T): Promise<boolean> {
    this.cache?.delete(record.id)
    return this.s.update.run(this.params(record)).changes > 0
  }

  async delete(id: string): Promise<boolean> {
    this.cache?.delete(id)
    return this.s.delete.run(this.kind, id).changes > 0
  }

  async listAll(): Promise<T[]> {
    if (!this.cache) return this.parse(this.s.all.all(this.kind))
    // Kept parsed (endpoints): every scaling pass lists them all, and parsing 500 endpoints 4 times a second
    // was 5 % of a busy leader (issue 35). Documents come back frozen, as `get` gives them.
    const out: T[] = []
    for (const id of this.s.allIds.all(this.kind) as string[]) {
      const record = this.cached(id)
      if (record) out.push(record)
    }
    return out
  }

  async listPublic(): Promise<T[]> {
    return this.parse(this.s.publicAll.all(this.kind))
  }

  async listByParent(parentId: string): Promise<T[]> {
    return this.parse(this.s.ofParent.all(this.kind, parentId))
  }

  async deleteByParent(parentId: string): Promise<number> {
    this.cache?.clear()
    return this.s.deleteOfParent.run(this.kind, parentId).changes
  }

  /** Documents of this kind matching a condition on `data` (JSON1) and the columns, oldest first. */
  protected select(where: string): (...params: unknown[]) => T[] {
    const stmt = this.db
      .prepare(`SELECT data FROM documents WHERE kind = '${this.kind}' AND ${where} ORDER BY seq`)
      .pluck()
    return (...params) => this.parse(stmt.all(...params))
  }

  private parse(rows: unknown[]): T[] {
    return rows.map((data) => JSON.parse(data as string) as T)
  }

  private params(record: T) {
    const isPublic = (record as { public?: unknown }).public === true ? 1 : 0
    return {
      kind: this.kind,
      id: record.id,
      accountId: record.accountId,
      parentId: this.parentOf(record),
      public: isPublic,
      data: JSON.stringify(record),
      createdAt: record.createdAt,
    }
  }
}

/** Documents kept parsed per kind, at most (a few thousand endpoints is a large installation). */
const CACHE_LIMIT = 10_000
