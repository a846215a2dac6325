import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { ChangeFeed } from '../../src/replicas/ChangeFeed.js'
import type { Leadership } from '../../src/replicas/Leadership.js'
import { until } from '../helpers/until.js'

/** One installation of Hangar: each call gives a part of one more control-plane process of it. */
export interface Installation {
  leadership(): Leadership
  feed(): ChangeFeed
}

/** What the contract needs from a pair of adapters under test. */
export interface ReplicasHarness {
  /** A fresh installation, sharing nothing with the others. */
  installation(): Promise<Installation>
  /** Whether an installation may run several processes (the cases with a second process run only then). */
  shared: boolean
  /** Removes what the installations left (PostgreSQL schemas). */
  cleanup?(): Promise<void>
}

/** A promise and its resolve function, to await what a callback sees. */
function signal<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/**
 * The behaviour every adapter of the replicas' ports (`Leadership`, `ChangeFeed`: the sole process of an
 * SQLite install, PostgreSQL replicas) must have; run once per adapter pair.
 */
export function replicasContract(name: string, setup: () => Promise<ReplicasHarness | null>) {
  describe(`Leadership and ChangeFeed contract: ${name}`, async () => {
    const h = await setup()
    const stops: Array<() => Promise<void>> = []
    afterEach(async () => {
      for (const s of stops.splice(0).reverse()) await s()
    })
    afterAll(async () => {
      await h?.cleanup?.()
    })
    if (!h) {
      it.skip('adapter not available here', () => {})
      return
    }
    const shared = h.shared
    /** A contender recording its transitions as `lead` / `lose: <reason>[ (handover)]`. */
    const contender = (i: Installation) => {
      const l = i.leadership()
      stops.push(() => l.stop())
      const log: string[] = []
      const leadingDuringOnLead: boolean[] = []
      const start = () =>
        l.start(
          async () => {
            leadingDuringOnLead.push(l.isLeader)
            log.push('lead')
          },
          async (why, handover) => void log.push(`lose: ${why}${handover ? ' (handover)' : ''}`),
        )
      return { l, log, leadingDuringOnLead, start }
    }
    const feedOf = async (i: Installation) => {
      const f = i.feed()
      stops.push(() => f.stop())
      await f.start()
      return f
    }

    describe('Leadership', () => {
      it(`says whether processes may share the installation (${shared})`, async () => {
        expect((await h.installation()).leadership().shared).toBe(shared)
      })

      it('leads at once when alone: onLead has run (as leader) when start resolves; a leader knows no other leader URL', async () => {
        const a = contender(await h.installation())
        expect(a.l.isLeader).toBe(false)
        await a.start()
        expect(a.log).toEqual(['lead'])
        expect(a.leadingDuringOnLead).toEqual([true])
        expect(a.l.isLeader).toBe(true)
        a.l.advertise('http://127.0.0.1:1/')
        expect(a.l.leaderUrl).toBeNull()
      })

      it('on stop runs onLose once, without handover when nobody else contends; a second stop does nothing', async () => {
        const a = contender(await h.installation())
        await a.start()
        await a.l.stop()
        expect(a.log).toEqual(['lead', 'lose: the control plane is stopping'])
        expect(a.l.isLeader).toBe(false)
        await a.l.stop()
        expect(a.log).toHaveLength(2)
      })

      it('never runs onLose before onLead has finished, even when stopped during onLead', async () => {
        const l = (await h.installation()).leadership()
        stops.push(() => l.stop())
        const order: string[] = []
        const leading = signal()
        const release = signal()
        const started = l.start(
          async () => {
            order.push('lead begins')
            leading.resolve()
            await release.promise
            order.push('lead ends')
          },
          async () => void order.push('lose'),
        )
        await leading.promise
        const stopping = l.stop()
        release.resolve()
        await Promise.all([started, stopping])
        expect(order).toEqual(['lead begins', 'lead ends', 'lose'])
      })

      it.skipIf(!shared)(
        'lets one process lead; the other follows, learns the advertised URL, and takes over on a handover',
        async () => {
          const i = await h.installation()
          const a = contender(i)
          const b = contender(i)
          await a.start()
          await b.start()
          expect([a.l.isLeader, b.l.isLeader]).toEqual([true, false])
          expect(b.log).toEqual([])
          a.l.advertise('http://10.0.0.1:8080')
          expect(await until(async () => b.l.leaderUrl ?? undefined, 5000, 'the leader URL on the follower')).toBe(
            'http://10.0.0.1:8080',
          )
          await a.l.stop()
          expect(a.log).toEqual(['lead', 'lose: the control plane is stopping (handover)'])
          await until(async () => b.l.isLeader, 5000, 'the takeover')
          expect(b.log).toEqual(['lead'])
          expect(b.l.leaderUrl).toBeNull()
        },
      )
    })

    describe('ChangeFeed', () => {
      it('never delivers a process its own messages', async () => {
        const i = await h.installation()
        const a = await feedOf(i)
        const heard: string[] = []
        a.on('job.changed', (p) => heard.push(p))
        a.publish('job.changed', 'j1')
        if (shared) {
          // Another process echoes what it hears; once the echo is back, A's own message has come and gone.
          const b = await feedOf(i)
          b.on('job.changed', (p) => b.publish('echo', p))
          const echoed = signal<string>()
          a.on('echo', (p) => echoed.resolve(p))
          a.publish('job.changed', 'j2')
          expect(await echoed.promise).toMatch(/^j[12]$/)
        } else {
          await new Promise((r) => setImmediate(r))
        }
        expect(heard).toEqual([])
      })

      it('returns from on() a function that unsubscribes', async () => {
        const i = await h.installation()
        const a = await feedOf(i)
        const heard: string[] = []
        const off = a.on('keys.revoked', (p) => heard.push(p))
        off()
        if (!shared) return expect(heard).toEqual([])
        const b = await feedOf(i)
        const done = signal()
        a.on('end', () => done.resolve())
        b.publish('keys.revoked', 'k1')
        b.publish('end')
        await done.promise
        expect(heard).toEqual([])
      })

      it.skipIf(!shared)(
        'delivers to the other process by topic with payloads, identical messages of one turn once, and what is queued at stop',
        async () => {
          const i = await h.installation()
          const a = await feedOf(i)
          const b = await feedOf(i)
          const heard: string[] = []
          b.on('job.changed', (p) => heard.push(`job ${p}`))
          b.on('endpoint.waiting', (p) => heard.push(`endpoint ${p}`))
          b.on('keys.revoked', (p) => heard.push(`keys ${JSON.stringify(p)}`))
          const end = signal()
          b.on('end', () => end.resolve())
          a.publish('job.changed', 'j1')
          a.publish('job.changed', 'j1')
          a.publish('endpoint.waiting', 'e1')
          a.publish('keys.revoked')
          a.publish('other.topic', 'x')
          // Published, then stopped at once: stop sends what is queued.
          a.publish('end')
          await a.stop()
          await end.promise
          expect(heard).toEqual(['job j1', 'endpoint e1', 'keys ""'])
        },
      )
    })
  })
}
