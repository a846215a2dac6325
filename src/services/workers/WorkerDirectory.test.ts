import { afterEach, describe, expect, it } from 'vitest'
import type { Allocation } from '../../catalog/Fleet.js'
import { placementRequest } from '../../domain/workers/placement.js'
import { type ChangeFeed, FeedListeners } from '../../replicas/ChangeFeed.js'
import { cpuEndpoint, liveWorker, storedWorker, workerContext, workload } from '../../../test/helpers/workerContext.js'
import { FleetView } from './FleetView.js'
import type { WorkerContext } from './WorkerContext.js'
import { FollowerDirectory, LeaderDirectory } from './WorkerDirectory.js'
import { WorkerLifecycle } from './WorkerLifecycle.js'

/** Two control-plane processes in one: what one publishes, every listener hears (as on PostgreSQL's feed). */
class LoopbackFeed implements ChangeFeed {
  private readonly listeners = new FeedListeners()
  publish(topic: string, payload = ''): void {
    this.listeners.deliver(topic, payload)
  }
  on(topic: string, listener: (payload: string) => void): () => void {
    return this.listeners.on(topic, listener)
  }
  onGap(listener: () => void): () => void {
    return this.listeners.onGap(listener)
  }
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
}

type Kit = ReturnType<typeof workerContext>
const kits: Kit[] = []
const leaders: LeaderDirectory[] = []
afterEach(async () => {
  for (const l of leaders.splice(0)) l.stop()
  for (const k of kits.splice(0)) await k.close()
})

/**
 * A leader's directory over real parts, and a follower's on the same change feed, wired as WorkerService wires
 * them: the leader describes its workers to the follower, the follower relays what workers do there.
 */
function setup() {
  const feed = new LoopbackFeed()
  const k = workerContext({ feed })
  kits.push(k)
  const ctx: WorkerContext = { ...k.ctx, describe: (w) => leader.describe(w) }
  const lifecycle = new WorkerLifecycle(ctx)
  const leader = new LeaderDirectory(ctx, lifecycle)
  leaders.push(leader)
  feed.on('worker.contact', (id) => leader.relayed.contact(id))
  feed.on('worker.taken', (p) => {
    const [id, ...jobIds] = p.split(' ')
    leader.relayed.jobsTaken(id, jobIds)
  })
  feed.on('worker.recycle', (id) => leader.relayed.recycle(id))
  const follower = new FollowerDirectory(new FleetView({ store: k.store, feed, mono: ctx.mono }))
  /** Takes back a running workload as worker `id` of ep1. */
  const adopt = async (id: string) => {
    const ep = cpuEndpoint()
    const allocation = k.fleet.reserve(id, placementRequest(ep, new Map())) as Allocation
    const run = workload()
    await lifecycle.takeBack(await storedWorker(ctx, id, ep, allocation), allocation, run.handle, null)
    return { w: liveWorker(ctx, id), ...run }
  }
  /** Lets coalesced descriptions go out (one turn of the event loop). */
  const broadcast = () => new Promise((r) => setImmediate(r))
  return { ...k, ctx, lifecycle, leader, follower, adopt, broadcast }
}

describe('LeaderDirectory', () => {
  it("accepts a live worker's own key only, for its own endpoint", async () => {
    const s = setup()
    await s.adopt('w1')
    await s.adopt('w2')
    expect(s.leader.authenticate('ep1', 'w1', 'key-w1')).toBe(true)
    expect(s.leader.authenticate('ep1', 'w1', 'key-w2')).toBe(false)
    expect(s.leader.authenticate('ep1', 'w1', undefined)).toBe(false)
    expect(s.leader.authenticate('other', 'w1', 'key-w1')).toBe(false)
    expect(s.leader.authenticate('ep1', 'w3', 'key-w3')).toBe(false)
  })

  it('answers each job-take turn by the worker’s phase: take, hold while parked or retiring, drain once stopping', async () => {
    const s = setup()
    const { w } = await s.adopt('w1')
    expect(s.leader.takeTurn('nobody')).toBe('drain')
    expect(s.leader.takeTurn('w1')).toBe('take')
    expect(w.phase).toBe('ready')
    expect(s.lifecycle.park('w1', 'idle', false)).toBe(true)
    expect(s.leader.takeTurn('w1')).toBe('hold')
    s.lifecycle.unpark('w1')
    s.leader.jobsTaken('w1', ['j1'])
    s.leader.recycle('w1')
    expect(w.retiring).toBe(true)
    expect(s.leader.takeTurn('w1')).toBe('hold')
    expect(s.leader.isDraining('w1')).toBe(false)
    s.lifecycle.jobLeft('w1', 'j1')
    expect(w.phase).toBe('stopping')
    expect(s.leader.takeTurn('w1')).toBe('drain')
    expect(s.leader.isDraining('w1')).toBe(true)
    expect(s.leader.workers('ep1')).toEqual([w])
    expect(s.leader.workers('other')).toEqual([])
  })
})

describe('FollowerDirectory', () => {
  it("serves a leader's workers from its broadcasts and relays what they do to the leader", async () => {
    const s = setup()
    const { w } = await s.adopt('w1')
    s.leader.start()
    s.lifecycle.touch(w)
    await s.broadcast()
    expect(s.follower.workers('ep1').map((f) => [f.id, f.phase])).toEqual([['w1', 'ready']])
    expect(await s.follower.authenticate('ep1', 'w1', 'key-w1')).toBe(true)
    expect(await s.follower.authenticate('ep1', 'w1', 'key-w2')).toBe(false)
    expect(s.follower.takeTurn('w1')).toBe('take')

    // A job taken through the follower makes the leader's worker busy; a parked one is held on the follower too.
    s.follower.jobsTaken('w1', ['j1'])
    expect([...w.jobs]).toEqual(['j1'])
    s.lifecycle.jobLeft('w1', 'j1')
    s.lifecycle.park('w1', 'idle', false)
    await s.broadcast()
    expect(s.follower.takeTurn('w1')).toBe('hold')

    // stopPod through the follower retires the leader's worker, which the follower then drains.
    s.lifecycle.unpark('w1')
    s.follower.recycle('w1')
    expect(w.phase).toBe('stopping')
    await s.broadcast()
    expect(s.follower.isDraining('w1')).toBe(true)
    expect(s.follower.takeTurn('w1')).toBe('drain')
    await w.finished
    await s.broadcast()
    expect(s.follower.workers('ep1')).toEqual([])
    expect(await s.follower.authenticate('ep1', 'w1', 'key-w1')).toBe(false)
  })

  it('passes signs of life on to the leader', async () => {
    const s = setup()
    const { w } = await s.adopt('w1')
    const before = w.lastContact
    s.advance(1_000)
    s.follower.contact('w1')
    expect(w.phase).toBe('ready')
    expect(w.lastContact).toBe(before + 1_000)
  })
})
