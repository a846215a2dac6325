import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { pidOf } from './helpers/runtime.js'
import { createEndpoint, endpointBody, jobCall, waitFinal } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

describe('the autoscaler', () => {
  let s: TestServer
  const logLines: Array<Record<string, any>> = []
  // Monotonic time (idle timeouts, FlashBoot windows, heartbeats) moves only when a test moves it. Business
  // time stays real: delayTime compares a real cold start with a real warm one.
  const mono = new ManualClock()
  beforeAll(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line)) })
    s = await startTestServer(
      { jobs: { pingIntervalMs: 500, sweepIntervalMs: 100 } },
      { logger, monotonic: () => mono.now() },
    )
  })
  afterAll(() => s.stop())

  /** A scaling decision that started after this call, done. */
  const decision = () => s.hangar.scaler.poke()

  const workers = async (ep: string) => (await s.api('GET', `/v2/serverless/${ep}/workers`)).body
  const sleepJob = (ep: string, ms: number, extra: Record<string, unknown> = {}) =>
    jobCall(s, 'POST', `/v2/${ep}/run`, { input: { ms }, ...extra }).then((r) => r.body.id as string)

  it('scales an idle endpoint from 0 to max on a burst at once (not after queueDelay), explains the wait, and returns to min after the idle timeout', async () => {
    // queueDelay 30 s: only the burst path can explain workers added within seconds.
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/sleep:latest', {
          name: 'burst',
          scaling: { type: 'QUEUE_DELAY', queueDelay: 30 },
          workers: { min: 0, max: 3, idleTimeout: 1 },
        }),
      )
    ).id
    const submitted = Date.now()
    const ids = await Promise.all(Array.from({ length: 8 }, () => sleepJob(ep, 1_200)))
    const full = await until(
      async () => {
        const list = await workers(ep)
        return list.summary.running === 3 ? list : undefined
      },
      15_000,
      'three running workers',
    )
    expect(Date.now() - submitted).toBeLessThan(15_000)
    expect(full.summary).toMatchObject({ running: 3, total: 3, throttled: 0, unhealthy: 0, parked: 0 })
    expect(full.workers[0]).toMatchObject({
      status: 'RUNNING',
      isStale: false,
      version: 1,
      cpuFlavorId: 'cpu3c',
      vcpuCount: 2,
      dataCenterId: 'LOCAL-1',
      jobsInProgress: 1,
      retiring: false,
      lastError: null,
    })
    expect(full.workers[0].hostId).toEqual(expect.any(String))
    expect(full.waiting).toMatchObject({
      jobs: expect.any(Number),
      reason: { code: 'MAX_REACHED', message: 'all 3 workers (workers.max) are busy' },
    })
    const waiting = await until(
      async () => {
        for (const id of ids) {
          const st = (await jobCall(s, 'GET', `/v2/${ep}/status/${id}`)).body
          if (st.status === 'IN_QUEUE' && st.waitingReason) return st
        }
      },
      10_000,
      'a waiting job with its reason',
    )
    expect(waiting.waitingReason).toBe('all 3 workers (workers.max) are busy')

    const firstDone = await waitFinal(s, ep, ids[0])
    // Jobs are still waiting, so the worker that ran it is busy again, with its count.
    expect((await workers(ep)).workers.find((w: any) => w.id === firstDone.workerId)?.jobsDone).toBeGreaterThanOrEqual(
      1,
    )
    for (const id of ids) expect((await waitFinal(s, ep, id)).status).toBe('COMPLETED')
    expect(new Set((await s.hangar.store.workers.listRecent(ep, 20)).map((w) => w.id)).size).toBe(3)
    // Idle workers stay until the idle timeout (1 s) has passed since a decision saw them idle, then go.
    await until(async () => (await workers(ep)).summary.idle === 3, 10_000, 'three idle workers')
    await decision()
    mono.advance(900)
    await decision()
    expect((await workers(ep)).summary).toMatchObject({ idle: 3, total: 3 })
    mono.advance(200)
    await decision()
    expect((await workers(ep)).summary.total).toBe(0)
    expect((await jobCall(s, 'GET', `/v2/${ep}/health`)).body.workers).toMatchObject({
      idle: 0,
      running: 0,
      initializing: 0,
      ready: 0,
      throttled: 0,
      unhealthy: 0,
    })

    const decisions = logLines.filter((l) => l.msg === 'scaling decision' && l.endpointId === ep)
    expect(decisions.find((d) => d.burst)).toMatchObject({
      policy: { type: 'QUEUE_DELAY', queueDelayMs: 30_000 },
      min: 0,
      max: 3,
      current: expect.any(Number),
      desired: 3,
      actions: expect.arrayContaining([expect.stringMatching(/^start x\d$/)]),
    })
    expect(decisions.some((d) => d.actions.some((a: string) => a.startsWith('stop ')))).toBe(true)
  }, 60_000)

  it('FlashBoot parks a scaled-down worker (taking no job) and reuses the same worker for the next job, faster than a cold start', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/echo:latest', {
          name: 'flash',
          flashboot: 'FLASHBOOT',
          workers: { min: 0, max: 1, idleTimeout: 1 },
        }),
      )
    ).id
    const cold = (await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: { n: 1 } })).body
    expect(cold.status).toBe('COMPLETED')
    // Idle past its timeout (1 s), the worker is parked.
    await until(async () => (await workers(ep)).summary.idle === 1, 10_000, 'an idle worker')
    await decision()
    mono.advance(1_100)
    await decision()
    const parked = await workers(ep)
    expect(parked.parked[0]).toMatchObject({
      id: cold.workerId,
      status: 'PARKED',
      parkedUntil: expect.any(String),
      jobsDone: 1,
    })
    expect(parked.summary).toMatchObject({ total: 0, parked: 1, idle: 0 })
    const record = (await s.hangar.store.workers.get(cold.workerId))!
    expect(() => process.kill(pidOf(record.runtimeRef), 0)).not.toThrow()

    // A parked worker takes no job: lowPriority jobs never scale up, so this one waits.
    const low = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { low: true }, policy: { lowPriority: true } }))
      .body.id
    await decision()
    expect((await workers(ep)).summary).toMatchObject({ total: 0, parked: 1 })
    const lowStatus = (await jobCall(s, 'GET', `/v2/${ep}/status/${low}`)).body
    expect(lowStatus).toMatchObject({
      status: 'IN_QUEUE',
      waitingReason: expect.stringMatching(/^lowPriority jobs never start workers/),
    })

    const warm = (await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: { n: 2 } })).body
    expect(warm).toMatchObject({ status: 'COMPLETED', workerId: cold.workerId })
    expect(warm.delayTime).toBeLessThan(cold.delayTime)
    expect((await waitFinal(s, ep, low)).status).toBe('COMPLETED')
    expect((await s.hangar.store.workers.get(cold.workerId))!.runtimeRef).toBe(record.runtimeRef)
    expect(logLines.some((l) => l.msg === 'parked worker reused' && l.workerId === cold.workerId)).toBe(true)
    // Taken back as the job was queued (its held job-take got the job at once), not by a later decision.
    expect(
      logLines.some(
        (l) =>
          l.msg === 'scaling decision' && l.endpointId === ep && l.actions.some((a: string) => a.startsWith('unpark ')),
      ),
    ).toBe(false)
  }, 30_000)

  it('rolls workers over to a new release without dropping the job in progress', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/sleep:latest', { name: 'rollout', workers: { min: 0, max: 1, idleTimeout: 60 } }),
      )
    ).id
    const first = await sleepJob(ep, 2_000)
    const running = await until(
      async () => {
        const r = await jobCall(s, 'GET', `/v2/${ep}/status/${first}`)
        return r.body.status === 'IN_PROGRESS' ? r.body : undefined
      },
      15_000,
      'first job running',
    )
    const patched = await s.api('PATCH', `/v2/serverless/${ep}`, { env: { RELEASE: 'two' } })
    expect(patched.status).toBe(200)
    const second = await sleepJob(ep, 10)
    const during = await until(
      async () => {
        const list = await workers(ep)
        return list.workers[0]?.retiring ? list : undefined
      },
      10_000,
      'old worker retiring',
    )
    expect(during).toMatchObject({
      endpointVersion: 2,
      workers: [{ id: running.workerId, isStale: true, version: 1, retiring: true, status: 'RUNNING' }],
      waiting: { reason: { code: 'ROLLOUT' } },
    })

    const firstDone = await waitFinal(s, ep, first)
    expect(firstDone).toMatchObject({ status: 'COMPLETED', workerId: running.workerId })
    expect(firstDone.retries).toBeUndefined()
    const secondDone = await waitFinal(s, ep, second)
    expect(secondDone.status).toBe('COMPLETED')
    expect(secondDone.workerId).not.toBe(running.workerId)
    expect(await s.hangar.store.workers.get(secondDone.workerId)).toMatchObject({ version: 2 })
    await until(
      async () => (await s.hangar.store.workers.get(running.workerId))?.state === 'EXITED',
      10_000,
      'old worker stopped',
    )
  }, 40_000)

  it('applies a PATCH of workers on the next decision', async () => {
    const ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/echo:latest', { name: 'patch-min', workers: { min: 0, max: 2, idleTimeout: 60 } }),
      )
    ).id
    expect((await workers(ep)).summary.total).toBe(0)
    expect((await s.api('PATCH', `/v2/serverless/${ep}`, { workers: { min: 2 } })).status).toBe(200)
    await until(async () => (await workers(ep)).summary.idle === 2, 15_000, 'two idle workers')
    expect((await s.api('PATCH', `/v2/serverless/${ep}`, { workers: { min: 0, max: 1 } })).status).toBe(200)
    // Above the new max, idle workers go at once (not after idleTimeout).
    await until(async () => (await workers(ep)).summary.total === 1, 10_000, 'down to the new max')
  }, 30_000)
})
