import pg from 'pg'
import type { Log } from '../../services/log.js'
import { TransitionQueue, type Leadership } from '../Leadership.js'
import { quoteIdent } from '../../store/postgres/migrate.js'
import { leaderLockKey, LOCK_CLASS } from './pgNames.js'

export interface PgLeadershipOptions {
  /** postgres://... of the database the store uses. */
  connectionString: string
  /** The store's schema: replicas on the same schema contend for one lock. */
  namespace: string
  log: Log
  /** How often a follower tries the lock, and a leader checks its connection, ms. */
  pollMs?: number
}

/**
 * Leadership through a PostgreSQL session advisory lock, held on a connection of its own. A follower tries
 * the lock every `pollMs`; the database releases it the moment the leader's session ends (process killed,
 * connection dropped), so a follower takes over within about `pollMs`. A leader whose connection errors or
 * fails its liveness query loses leadership at once, before anyone else can win it back: the lock is tied
 * to that very session, so two leaders never hold it together (a leader cut off from the database stops its
 * loops when it notices; until then it can write nothing anyway).
 *
 * The leader's address lives in a one-row table of the namespace, `hangar_leader` (url, pid of the session
 * holding the lock), written on the lock's own connection once `onLead` has finished. A follower reads it at
 * each try of the lock and believes it only while that pid still holds the lock (pg_locks), so a dead
 * leader's row is never followed. The table belongs to this adapter, not to the store (SQLite has no use for
 * it), hence created here rather than by a store migration.
 */
export class PgLeadership implements Leadership {
  private client: pg.Client | null = null
  private leading = false
  /** Leading and onLead has finished: the address may be published. */
  private ready = false
  private stopped = false
  private timer: NodeJS.Timeout | null = null
  private onLead: () => Promise<void> = async () => {}
  private onLose: (reason: string, handover: boolean) => Promise<void> = async () => {}
  private readonly transitions: TransitionQueue
  private readonly key: number
  private readonly pollMs: number
  /** Every contender of a namespace connects under this name (see othersContend). */
  private readonly appName: string
  private readonly table: string
  private advertised: string | null = null
  private known: string | null = null

  constructor(private readonly o: PgLeadershipOptions) {
    this.key = leaderLockKey(o.namespace)
    this.pollMs = o.pollMs ?? 1000
    this.appName = `hangar-leader-${(this.key >>> 0).toString(16)}`
    this.table = `${quoteIdent(o.namespace)}.hangar_leader`
    this.transitions = new TransitionQueue((err) => o.log.error({ err: err.message }, 'leadership transition failed'))
  }

  readonly shared = true

  get isLeader(): boolean {
    return this.leading
  }

  get leaderUrl(): string | null {
    return this.leading ? null : this.known
  }

  advertise(url: string): void {
    this.advertised = url
    // A leader that is done taking over publishes at once; one still in onLead publishes when it ends.
    if (this.leading && this.client && this.ready) void this.publish(this.client)
  }

  async start(
    onLead: () => Promise<void>,
    onLose: (reason: string, handover: boolean) => Promise<void>,
  ): Promise<void> {
    this.onLead = onLead
    this.onLose = onLose
    await this.tick()
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    await this.transitions.idle()
    // A leader that stops hands workers and pods over only when another process contends for the lock;
    // the last one stops them, as a single process does.
    if (this.leading) await this.lose('the control plane is stopping', await this.othersContend())
    const c = this.client
    this.client = null
    // Ending the session releases the lock: a follower takes over at its next try.
    // A session already broken has released the lock with it: nothing is left to end.
    await c?.end().catch(() => undefined)
  }

  /** One attempt: connect if needed, then try the lock (follower) or prove the session alive (leader). */
  private async tick(): Promise<void> {
    if (this.stopped) return
    try {
      const c = this.client ?? (await this.connect())
      if (!this.leading) {
        const r = await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [LOCK_CLASS, this.key])
        if (r.rows[0]?.ok && !this.stopped && this.client === c) {
          this.leading = true
          this.known = null
          this.o.log.info({ namespace: this.o.namespace }, 'became the leader')
          await this.transitions.run(this.onLead)
          if (this.leading && this.client === c) {
            this.ready = true
            await this.publish(c)
          }
        } else {
          this.known = await this.readLeader(c)
        }
      } else {
        await c.query('SELECT 1')
      }
    } catch (err) {
      await this.drop(`the leadership connection failed: ${(err as Error).message}`)
    }
    if (!this.stopped) this.timer = setTimeout(() => void this.tick(), this.pollMs)
  }

  private async connect(): Promise<pg.Client> {
    const c = new pg.Client({
      connectionString: this.o.connectionString,
      keepAlive: true,
      connectionTimeoutMillis: 5000,
      query_timeout: 5000,
      application_name: this.appName,
    })
    // An idle connection that breaks says so here: leadership is lost now, not at the next poll.
    c.on('error', (err) => void this.drop(`the leadership connection failed: ${err.message}`, c))
    c.on('end', () => void this.drop('the leadership connection ended', c))
    this.client = c
    try {
      await c.connect()
    } catch (err) {
      this.client = null
      throw err
    }
    return c
  }

  /** Forgets the connection (and the lock with it); a leader loses leadership. */
  private async drop(reason: string, which?: pg.Client): Promise<void> {
    const c = this.client
    if (!c || (which && which !== c)) return
    this.client = null
    c.removeAllListeners('end')
    c.on('error', () => undefined)
    // The session is lost already (`reason` says how; a leader logs it as it loses, below): ending it only frees
    // the socket, and an end that fails has nothing left to free.
    void c.end().catch(() => undefined)
    // Cut off from the database: the fleet goes on under whoever takes the lock (possibly this process again).
    if (this.leading) await this.lose(reason, true)
  }

  private async lose(reason: string, handover: boolean): Promise<void> {
    if (!this.leading) return
    this.leading = false
    this.ready = false
    this.o.log.warn({ namespace: this.o.namespace, reason, handover }, 'leadership lost')
    await this.transitions.run(() => this.onLose(reason, handover))
  }

  /** Writes this leader's address, tied to the session that holds the lock. */
  private async publish(c: pg.Client): Promise<void> {
    const url = this.advertised
    if (!url) return
    try {
      await c.query(
        `CREATE TABLE IF NOT EXISTS ${this.table} (id smallint PRIMARY KEY CHECK (id = 1), url text NOT NULL, pid integer NOT NULL, since timestamptz NOT NULL)`,
      )
      await c.query(
        `INSERT INTO ${this.table} (id, url, pid, since) VALUES (1, $1, pg_backend_pid(), now()) ON CONFLICT (id) DO UPDATE SET url = EXCLUDED.url, pid = EXCLUDED.pid, since = EXCLUDED.since`,
        [url],
      )
      this.o.log.info({ url }, 'leader address published')
    } catch (err) {
      // Followers answer 503 for what needs the leader until the next takeover publishes it.
      this.o.log.error({ err: (err as Error).message, url }, 'could not publish the leader address')
    }
  }

  /** The leader's address, if the session that wrote it still holds the lock. */
  private async readLeader(c: pg.Client): Promise<string | null> {
    try {
      const r = await c.query<{ url: string }>(
        `SELECT l.url FROM ${this.table} l JOIN pg_locks k ON k.pid = l.pid
          WHERE k.locktype = 'advisory' AND k.granted AND k.classid = $1::bigint::oid AND k.objid = $2::bigint::oid AND k.objsubid = 2`,
        [LOCK_CLASS, this.key >>> 0],
      )
      return r.rows[0]?.url ?? null
    } catch (err) {
      // 42P01: no leader has published an address in this namespace yet.
      if ((err as { code?: string }).code !== '42P01')
        this.o.log.warn({ err: (err as Error).message }, 'could not read the leader address')
      return null
    }
  }

  /** Whether other processes of this namespace contend (their sessions carry its application name). */
  private async othersContend(): Promise<boolean> {
    const c = this.client
    if (!c) return true
    try {
      const r = await c.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
        [this.appName],
      )
      return (r.rows[0]?.n ?? 0) > 0
    } catch {
      // Cannot tell (the session is failing, which its error handler reports): assume others contend, the safe side.
      return true
    }
  }
}
