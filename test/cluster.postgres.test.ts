import { randomUUID } from 'node:crypto'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import type { Leadership } from '../src/replicas/Leadership.js'
import { PgChangeFeed } from '../src/replicas/postgres/PgChangeFeed.js'
import { PgLeadership } from '../src/replicas/postgres/PgLeadership.js'
import { leaderLockKey } from '../src/replicas/postgres/pgNames.js'
import { silentLog } from '../src/services/log.js'
import { pgAvailableOrSkip, PG_TEST_URL as TEST_DATABASE_URL } from './helpers/postgres.js'
import { until } from './helpers/until.js'

const reachable = await pgAvailableOrSkip('the leadership and change-feed tests')
const cleanup: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c()
})

/** A leadership contender recording its transitions. */
function contender(namespace: string, connectionString = TEST_DATABASE_URL) {
  const log: string[] = []
  const l = new PgLeadership({ connectionString, namespace, log: silentLog, pollMs: 100 })
  cleanup.push(() => l.stop())
  const start = () =>
    l.start(
      async () => void log.push('lead'),
      async (why, handover) => void log.push(`lose: ${why}${handover ? ' (handover)' : ''}`),
    )
  return { l, log, start }
}

function feed(namespace: string): PgChangeFeed {
  const f = new PgChangeFeed({ connectionString: TEST_DATABASE_URL, namespace, log: silentLog, reconnectMs: 100 })
  cleanup.push(() => f.stop())
  return f
}

describe.skipIf(!reachable)('PgLeadership', () => {
  it('lets exactly one contender of a namespace lead, and another namespace lead apart', async () => {
    const ns = `t_${randomUUID()}`
    const a = contender(ns)
    const b = contender(ns)
    const other = contender(`${ns}_other`)
    await a.start()
    await b.start()
    await other.start()
    expect(a.l.isLeader).toBe(true)
    expect(a.log).toEqual(['lead'])
    expect(b.l.isLeader).toBe(false)
    expect(other.l.isLeader).toBe(true)
  })

  it('hands leadership over when the leader stops', async () => {
    const ns = `t_${randomUUID()}`
    const a = contender(ns)
    const b = contender(ns)
    await a.start()
    await b.start()
    await a.l.stop()
    expect(a.log).toEqual(['lead', 'lose: the control plane is stopping (handover)'])
    await until(async () => b.l.isLeader, 3000, 'takeover')
    expect(b.log).toEqual(['lead'])
  })

  it('the last contender to stop does not hand over (it stops its workers like a single process)', async () => {
    const a = contender(`t_${randomUUID()}`)
    await a.start()
    await a.l.stop()
    expect(a.log).toEqual(['lead', 'lose: the control plane is stopping'])
  })

  it('loses leadership at once when its session is killed, and a follower takes over', async () => {
    const ns = `t_${randomUUID()}`
    const a = contender(ns)
    const b = contender(ns)
    await a.start()
    await b.start()
    // The database ends the leader's session, as when its connection drops.
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await admin.connect()
    cleanup.push(() => admin.end())
    await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'hangar-leader-%' AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = $1::oid)`,
      [leaderObjId(ns)],
    )
    await until(async () => !a.l.isLeader, 5000, 'loss')
    expect(a.log[1]).toMatch(/^lose: the leadership connection/)
    await until(async () => b.l.isLeader || a.l.isLeader, 3000, 'takeover')
    // Exactly one of them leads again (the old leader contends again once it reconnects).
    expect([a.l.isLeader, b.l.isLeader].filter(Boolean)).toHaveLength(1)
  })

  it('never runs onLose before onLead has finished', async () => {
    const ns = `t_${randomUUID()}`
    const order: string[] = []
    const l: Leadership = new PgLeadership({
      connectionString: TEST_DATABASE_URL,
      namespace: ns,
      log: silentLog,
      pollMs: 50,
    })
    cleanup.push(() => l.stop())
    const slowLead = l.start(
      async () => {
        order.push('lead begins')
        await new Promise((r) => setTimeout(r, 200))
        order.push('lead ends')
      },
      async () => void order.push('lose'),
    )
    // Stop while onLead runs (a fixed delay could come before the lock is even taken on a loaded machine).
    const stopping = (async () => {
      await until(async () => order.includes('lead begins'), 5000, 'onLead to begin')
      await l.stop()
    })()
    await Promise.all([slowLead, stopping])
    expect(order).toEqual(['lead begins', 'lead ends', 'lose'])
  })
})

describe.skipIf(!reachable)('PgChangeFeed', () => {
  it('delivers to the other processes of the namespace only, batched, never back to the sender', async () => {
    const ns = `t_${randomUUID()}`
    const a = feed(ns)
    const b = feed(ns)
    const stranger = feed(`${ns}_other`)
    await Promise.all([a.start(), b.start(), stranger.start()])
    const heardByB: string[] = []
    const heardByA: string[] = []
    const heardByStranger: string[] = []
    b.on('job', (p) => heardByB.push(p))
    a.on('job', (p) => heardByA.push(p))
    stranger.on('job', (p) => heardByStranger.push(p))
    for (let i = 0; i < 2000; i++) a.publish('job', `job-${i}`)
    a.publish('job', 'job-0')
    await until(async () => heardByB.length === 2000, 3000, 'delivery')
    expect(heardByB[0]).toBe('job-0')
    expect(heardByB[1999]).toBe('job-1999')
    await new Promise((r) => setTimeout(r, 100))
    expect(heardByA).toEqual([])
    expect(heardByStranger).toEqual([])
  })

  it('wakes another process within milliseconds', async () => {
    const ns = `t_${randomUUID()}`
    const a = feed(ns)
    const b = feed(ns)
    await Promise.all([a.start(), b.start()])
    const heard = new Promise<number>((resolve) => b.on('queue', () => resolve(performance.now())))
    const sent = performance.now()
    a.publish('queue', 'ep1')
    expect((await heard) - sent).toBeLessThan(100)
  })

  it('reconnects after its connection is killed and reports the gap', async () => {
    const ns = `t_${randomUUID()}`
    const a = feed(ns)
    const b = feed(ns)
    await Promise.all([a.start(), b.start()])
    let gaps = 0
    b.onGap(() => gaps++)
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await admin.connect()
    cleanup.push(() => admin.end())
    await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hangar-feed' AND query LIKE 'LISTEN ${'hangar_feed_'}%' AND pid <> pg_backend_pid()`,
    )
    await until(async () => gaps > 0, 3000, 'reconnect')
    const heard: string[] = []
    b.on('keys.revoked', (p) => heard.push(p))
    await until(
      async () => {
        a.publish('keys.revoked', 'x')
        return heard.length > 0
      },
      3000,
      'delivery after reconnect',
    )
  })
})

function leaderObjId(ns: string): number {
  // pg_locks shows the second key of a two-key advisory lock as an unsigned oid.
  return leaderLockKey(ns) >>> 0
}
