import pg from 'pg'
import type { Log } from '../../services/log.js'
import { FeedListeners, type ChangeFeed } from '../ChangeFeed.js'
import { feedChannel } from './pgNames.js'

export interface PgChangeFeedOptions {
  /** postgres://... of the database the store uses. */
  connectionString: string
  /** The store's schema: only replicas on the same schema hear each other. */
  namespace: string
  log: Log
  /** Wait before reconnecting a dropped connection, ms. */
  reconnectMs?: number
}

/** NOTIFY payloads are limited to 8000 bytes; batches are cut below that. */
const MAX_PAYLOAD = 7800

/**
 * The change feed over PostgreSQL LISTEN/NOTIFY, on one dedicated connection that both listens and sends.
 * Messages published in one turn of the event loop go out as one NOTIFY (lines `topic payload`, cut at
 * 7800 bytes); the database delivers them to every listening session once the sending statement ends, so a
 * message about a committed write arrives after the write is visible. Our own notifications come back too:
 * they are recognised by the sending session's pid and ignored. A dropped connection is reopened after
 * `reconnectMs`, and listeners are told of the gap.
 */
export class PgChangeFeed implements ChangeFeed {
  private readonly listeners = new FeedListeners()
  private readonly channel: string
  private client: pg.Client | null = null
  private pending = new Set<string>()
  private flushing: Promise<void> | null = null
  private stopped = false
  private reconnectTimer: NodeJS.Timeout | null = null

  constructor(private readonly o: PgChangeFeedOptions) {
    this.channel = feedChannel(o.namespace)
  }

  publish(topic: string, payload = ''): void {
    if (this.stopped) return
    if (this.pending.size === 0) setImmediate(() => void this.flush())
    this.pending.add(payload ? `${topic} ${payload.replace(/\n/g, ' ')}` : topic)
  }

  on(topic: string, listener: (payload: string) => void): () => void {
    return this.listeners.on(topic, listener)
  }

  onGap(listener: () => void): () => void {
    return this.listeners.onGap(listener)
  }

  async start(): Promise<void> {
    await this.connect()
  }

  async stop(): Promise<void> {
    await this.flush()
    this.stopped = true
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer)
    const c = this.client
    this.client = null
    c?.removeAllListeners('end')
    // Stopping: a connection that is broken already has nothing left to close.
    await c?.end().catch(() => undefined)
  }

  private async connect(): Promise<void> {
    const c = new pg.Client({
      connectionString: this.o.connectionString,
      keepAlive: true,
      connectionTimeoutMillis: 5000,
      application_name: 'hangar-feed',
    })
    let ownPid = -1
    c.on('notification', (n) => {
      if (n.channel === this.channel && n.processId !== ownPid && n.payload) this.receive(n.payload)
    })
    c.on('error', (err) => this.lost(c, err.message))
    c.on('end', () => this.lost(c, 'connection ended'))
    await c.connect()
    ownPid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid
    await c.query(`LISTEN ${this.channel}`)
    this.client = c
  }

  private receive(batch: string): void {
    for (const line of batch.split('\n')) {
      const space = line.indexOf(' ')
      const topic = space < 0 ? line : line.slice(0, space)
      const payload = space < 0 ? '' : line.slice(space + 1)
      try {
        this.listeners.deliver(topic, payload)
      } catch (err) {
        this.o.log.error({ topic, err: (err as Error).message }, 'a change-feed listener failed')
      }
    }
  }

  private lost(c: pg.Client, reason: string): void {
    if (this.client !== c || this.stopped) return
    this.client = null
    c.on('error', () => undefined)
    // Lost already (logged below): ending it only frees the socket.
    void c.end().catch(() => undefined)
    this.o.log.warn({ reason }, 'change feed disconnected; reconnecting')
    this.scheduleReconnect()
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null
      this.connect().then(
        // Whatever was sent while disconnected is lost: waiters re-check the store.
        () => this.listeners.gap(),
        (err: Error) => {
          this.o.log.warn({ err: err.message }, 'change feed cannot reconnect yet')
          this.scheduleReconnect()
        },
      )
    }, this.o.reconnectMs ?? 500)
  }

  /** Sends what was published, in payloads under the NOTIFY limit; one flush at a time keeps order. */
  private async flush(): Promise<void> {
    while (this.flushing) await this.flushing
    if (this.pending.size === 0) return
    const lines = [...this.pending]
    this.pending = new Set()
    this.flushing = this.send(lines).finally(() => (this.flushing = null))
    await this.flushing
  }

  private async send(lines: string[]): Promise<void> {
    const c = this.client
    // Not connected: the messages are lost, as any sent during a gap (listeners re-check on reconnect).
    if (!c) return
    const batches: string[] = []
    let cur = ''
    let bytes = 0
    for (const line of lines) {
      const add = Buffer.byteLength(line) + 1
      if (cur && bytes + add > MAX_PAYLOAD) {
        batches.push(cur)
        cur = ''
        bytes = 0
      }
      cur = cur ? `${cur}\n${line}` : line
      bytes += add
    }
    if (cur) batches.push(cur)
    try {
      // One statement per batch set: `SELECT pg_notify(...), pg_notify(...)` sends them all at once.
      const args = batches.map((_, i) => `pg_notify($1, $${i + 2})`).join(', ')
      await c.query(`SELECT ${args}`, [this.channel, ...batches])
    } catch (err) {
      this.o.log.warn({ err: (err as Error).message, messages: lines.length }, 'change feed could not send')
    }
  }
}
