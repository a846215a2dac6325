import pg from 'pg'
import type { Log } from '../../services/log.js'
import { TransitionQueue, type Leadership } from '../Leadership.js'
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
 */
export class PgLeadership implements Leadership {
  private client: pg.Client | null = null
  private leading = false
  private stopped = false
  private timer: NodeJS.Timeout | null = null
  private onLead: () => Promise<void> = async () => {}
  private onLose: (reason: string, handover: boolean) => Promise<void> = async () => {}
  private readonly transitions: TransitionQueue
  private readonly key: number
  private readonly pollMs: number
  /** Every contender of a namespace connects under this name (see othersContend). */
  private readonly appName: string

  constructor(private readonly o: PgLeadershipOptions) {
    this.key = leaderLockKey(o.namespace)
    this.pollMs = o.pollMs ?? 1000
    this.appName = `hangar-leader-${(this.key >>> 0).toString(16)}`
    this.transitions = new TransitionQueue((err) => o.log.error({ err: err.message }, 'leadership transition failed'))
  }

  readonly shared = true

  get isLeader(): boolean {
    return this.leading
  }

  async start(onLead: () => Promise<void>, onLose: (reason: string, handover: boolean) => Promise<void>): Promise<void> {
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
          this.o.log.info({ namespace: this.o.namespace }, 'became the leader')
          await this.transitions.run(this.onLead)
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
    const c = new pg.Client({ connectionString: this.o.connectionString, keepAlive: true, connectionTimeoutMillis: 5000, query_timeout: 5000, application_name: this.appName })
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
    void c.end().catch(() => undefined)
    // Cut off from the database: the fleet goes on under whoever takes the lock (possibly this process again).
    if (this.leading) await this.lose(reason, true)
  }

  private async lose(reason: string, handover: boolean): Promise<void> {
    if (!this.leading) return
    this.leading = false
    this.o.log.warn({ namespace: this.o.namespace, reason, handover }, 'leadership lost')
    await this.transitions.run(() => this.onLose(reason, handover))
  }

  /** Whether other processes of this namespace contend (their sessions carry its application name). */
  private async othersContend(): Promise<boolean> {
    const c = this.client
    if (!c) return true
    try {
      const r = await c.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()', [this.appName])
      return (r.rows[0]?.n ?? 0) > 0
    } catch {
      return true
    }
  }
}
