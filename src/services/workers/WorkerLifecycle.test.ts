import { afterEach, describe, expect, it } from 'vitest'
import type { Allocation } from '../../catalog/Fleet.js'
import { placementRequest } from '../../domain/workers/placement.js'
import { job as contractJob } from '../../../test/contracts/store.js'
import { cpuEndpoint, liveWorker, storedWorker, workerContext, workload } from '../../../test/helpers/workerContext.js'
import type { WorkerMeter } from '../billing/UsageMeter.js'
import { WorkerLifecycle } from './WorkerLifecycle.js'

type Kit = ReturnType<typeof workerContext>
const kits: Kit[] = []
afterEach(async () => {
  for (const k of kits.splice(0)) await k.close()
})

/** A lifecycle on real parts, with a meter that records what it is told. */
function setup() {
  const billed: string[] = []
  const meter: WorkerMeter = {
    workerBillable: (w) => void billed.push(`+${w.id}`),
    workerUnbillable: (w) => void billed.push(`-${w.id}`),
  }
  const k = workerContext({ meter })
  kits.push(k)
  return { ...k, billed, lifecycle: new WorkerLifecycle(k.ctx) }
}

/** Takes back a running workload as worker `id` (as after a restart), on capacity reserved for it. */
async function adopted(k: ReturnType<typeof setup>, id = 'w1') {
  const ep = cpuEndpoint()
  const allocation = k.fleet.reserve(id, placementRequest(ep, new Map())) as Allocation
  expect(allocation.hostId).toBe('h1')
  const r = await storedWorker(k.ctx, id, ep, allocation)
  const run = workload()
  await k.lifecycle.takeBack(r, allocation, run.handle, null)
  return { w: liveWorker(k.ctx, id), ...run }
}

const stored = (k: ReturnType<typeof setup>, id: string) => k.store.workers.get(id)

describe('WorkerLifecycle', () => {
  it('holds an adopted worker starting until its first call, then ready, billed and stored READY', async () => {
    const k = setup()
    const { w } = await adopted(k)
    expect(w.phase).toBe('starting')
    expect((await stored(k, 'w1'))?.state).toBe('STARTING')
    k.lifecycle.touch(w)
    expect(w.phase).toBe('ready')
    expect(k.billed).toEqual(['+w1'])
    expect(k.described).toEqual(['w1 starting', 'w1 ready'])
    await expect.poll(async () => (await stored(k, 'w1'))?.state).toBe('READY')
    // Later calls are signs of life only.
    k.advance(500)
    k.lifecycle.touch(w)
    expect(w.lastContact).toBe(k.ctx.mono())
    expect(k.described).toHaveLength(2)
  })

  it('parks only an idle ready worker; a job taken while parked makes it ready again', async () => {
    const k = setup()
    const { w } = await adopted(k)
    expect(k.lifecycle.park('w1', 'scaled down', false)).toBe(false)
    k.lifecycle.touch(w)
    k.lifecycle.jobsTaken('w1', ['j1'])
    expect(k.lifecycle.park('w1', 'scaled down', false)).toBe(false)
    k.lifecycle.jobLeft('w1', 'j1')
    expect(w.jobsDone).toBe(1)
    expect(k.lifecycle.park('w1', 'scaled down', true)).toBe(true)
    expect(w).toMatchObject({ phase: 'parked', parkedPriority: true })
    expect(k.lifecycle.unpark('w1')).toBe(true)
    expect(k.lifecycle.unpark('w1')).toBe(false)
    expect(k.lifecycle.park('w1', 'scaled down', false)).toBe(true)
    k.lifecycle.jobsTaken('w1', ['j2'])
    expect(w.phase).toBe('ready')
    expect(k.billed).toEqual(['+w1', '-w1', '+w1', '-w1', '+w1'])
  })

  it('stops a retiring worker once its last job ends, gives its capacity back and records it EXITED', async () => {
    const k = setup()
    const { w, stops } = await adopted(k)
    k.lifecycle.touch(w)
    k.lifecycle.jobsTaken('w1', ['j1', 'j2'])
    k.lifecycle.retire('w1', 'new release')
    expect(w.retiring).toBe(true)
    k.lifecycle.jobLeft('w1', 'j1')
    expect(stops).toEqual([])
    k.lifecycle.jobLeft('w1', 'j2')
    expect(w.phase).toBe('stopping')
    expect(stops).toEqual([k.config.stopGraceMs])
    await w.finished
    expect(k.ctx.live.has('w1')).toBe(false)
    expect(k.fleet.allocation('w1')).toBeUndefined()
    expect(await stored(k, 'w1')).toMatchObject({ state: 'EXITED', lastError: null })
    expect(k.ctx.backoff.consecutive('ep1')).toBe(0)
  })

  it('leaves an UNHEALTHY slot for a crashed worker and starts the back-off; stopping that slot forgets it', async () => {
    const k = setup()
    const { w, exit } = await adopted(k)
    k.lifecycle.touch(w)
    exit({ code: 1, signal: null })
    await w.finished
    expect(k.ctx.live.get('w1')).toBe(w)
    expect(w).toMatchObject({ phase: 'unhealthy', handle: null })
    expect(k.ctx.backoff.consecutive('ep1')).toBe(1)
    expect(k.ctx.backoff.remainingMs('ep1')).toBeGreaterThan(0)
    expect(await stored(k, 'w1')).toMatchObject({ state: 'FAILED', lastError: 'worker w1 exited (code 1)' })
    expect(k.fleet.allocation('w1')).toBeUndefined()
    await k.lifecycle.stop('w1', 'scaled down')
    expect(k.ctx.live.has('w1')).toBe(false)
  })

  it("gives a crashed worker's running jobs back counted as a loss, a stopped worker's without counting it", async () => {
    const k = setup()
    const now = k.ctx.deps.clock.now()
    await k.store.jobs.insert(contractJob('ep1', { id: 'j1', createdAt: now, expiresAt: now + 3_600_000 }))
    await k.store.jobs.insert(contractJob('ep1', { id: 'j2', createdAt: now, expiresAt: now + 3_600_000 }))
    const crashed = await adopted(k, 'w1')
    await adopted(k, 'w2')
    expect(await k.store.jobs.take('ep1', 'w1', 1, now)).toHaveLength(1)
    expect(await k.store.jobs.take('ep1', 'w2', 1, now)).toHaveLength(1)
    crashed.exit({ code: 137, signal: null })
    await crashed.w.finished
    await k.lifecycle.stop('w2', 'scaled down')
    const after = await Promise.all(['j1', 'j2'].map((id) => k.store.jobs.get(id)))
    expect(after.map((j) => [j?.status, j?.retries, j?.workerId])).toEqual([
      ['IN_QUEUE', 1, null],
      ['IN_QUEUE', 0, null],
    ])
    expect(after[0]?.error ?? null).toBeNull()
  })

  it('gives up on a worker that never called in, and on one that stopped sending heartbeats', async () => {
    const k = setup()
    const first = await adopted(k, 'w1')
    k.advance(k.config.workerStartTimeoutMs - 1)
    k.lifecycle.checkLiveness()
    expect(first.w.phase).toBe('starting')
    k.advance(2)
    k.lifecycle.checkLiveness()
    expect(first.w.lostReason).toContain(`did not call in within ${k.config.workerStartTimeoutMs} ms`)
    expect(first.stops).toEqual([0])
    await first.w.finished
    expect(first.w.phase).toBe('unhealthy')

    const second = await adopted(k, 'w2')
    k.lifecycle.touch(second.w)
    const silence = k.config.pingIntervalMs * k.config.missedPings
    k.advance(silence)
    k.lifecycle.checkLiveness()
    expect(second.w.phase).toBe('ready')
    k.advance(1)
    k.lifecycle.checkLiveness()
    expect(second.w.lostReason).toContain('sent no heartbeat')
    await second.w.finished
    expect(await stored(k, 'w2')).toMatchObject({ state: 'FAILED' })
    // w2 had stayed up past healthyAfterMs (a healthy worker clears the count): its loss is the only failure.
    expect(k.ctx.backoff.consecutive('ep1')).toBe(1)
  })

  it('abandons a worker whose host is down without asking its runtime', async () => {
    const k = setup()
    const { w, stops } = await adopted(k)
    k.lifecycle.touch(w)
    expect(k.lifecycle.abandon(w, 'host h1 is down')).toBe(true)
    expect(w.phase).toBe('stopping')
    await w.finished
    expect(stops).toEqual([])
    expect(w.phase).toBe('unhealthy')
    expect(await stored(k, 'w1')).toMatchObject({ state: 'FAILED', lastError: 'host h1 is down' })
    expect(k.lifecycle.abandon(w, 'again')).toBe(false)
  })

  it('hands its workers over without stopping them: their exit is the next leader’s to act on', async () => {
    const k = setup()
    const { w, exit, stops } = await adopted(k)
    k.lifecycle.touch(w)
    await expect.poll(async () => (await stored(k, 'w1'))?.state).toBe('READY')
    k.lifecycle.handOver()
    expect(k.ctx.live.size).toBe(0)
    expect(k.fleet.allocation('w1')).toBeUndefined()
    exit({ code: 0, signal: null })
    await w.finished
    expect(stops).toEqual([])
    expect(w.phase).toBe('ready')
    expect((await stored(k, 'w1'))?.state).toBe('READY')
    expect(k.ctx.backoff.consecutive('ep1')).toBe(0)
  })
})
