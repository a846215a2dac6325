import { afterEach, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { createPod, podBody, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const L4 = 'NVIDIA L4'

/** One host with `gpus` virtual L4s: a fleet small enough for accounts to contend for. */
const fleetOf = (gpus: number) => ({
  detectGpus: false,
  hosts: [
    {
      id: 'h1',
      dataCenterId: 'LOCAL-1',
      vcpus: 16,
      memoryGb: 64,
      gpus: [{ typeId: L4, count: gpus, cudaVersion: '12.4', virtual: true }],
    },
  ],
})

describe('two accounts on a small fleet: quotas, spend limits and fair share', () => {
  let s: TestServer
  afterEach(() => s?.stop())

  const gpuEndpoint = (name: string, key: string, max = 2) =>
    createEndpoint(
      s,
      endpointBody('hangar/sleep:latest', {
        name,
        cpu: undefined,
        gpu: { pools: ['ADA_24'], count: 1 },
        workers: { min: 0, max, idleTimeout: 1 },
      }),
      key,
    ).then((e) => e.id as string)
  const run = (ep: string, key: string, ms: number) =>
    jobCall(s, 'POST', `/v2/${ep}/run`, { input: { ms } }, { key }).then((r) => r.body.id as string)
  const workers = async (ep: string, key: string) =>
    (await s.api('GET', `/v2/serverless/${ep}/workers`, undefined, key)).body
  /** The job's final state, read with its own account's key (another's endpoint is 404). */
  const final = async (ep: string, id: string, key: string) =>
    (await jobCall(s, 'GET', `/v2/${ep}/status-sync/${id}?wait=30000`, undefined, { key })).body
  const placed = (list: any) => list.workers.filter((w: any) => w.hostId !== null && w.status !== 'THROTTLED')

  it('B borrows idle GPUs and gives them back when A needs its share; A then hits its GPU quota and its spend limit', async () => {
    s = await startTestServer({ fleet: fleetOf(2), quotas: { checkIntervalMs: 200 }, jobs: { pingIntervalMs: 500 } })
    const a = await s.accountKey('team-a')
    const b = await s.accountKey('team-b')
    // A: one GPU at most, and that one guaranteed. B: one guaranteed, no limit: it may borrow the rest.
    expect((await s.api('PUT', '/v2/admin/accounts/team-a/quotas', { gpus: 1, guaranteedGpus: 1 })).status).toBe(200)
    expect((await s.api('PUT', '/v2/admin/accounts/team-b/quotas', { guaranteedGpus: 1 })).status).toBe(200)
    const epA = await gpuEndpoint('a-infer', a)
    const epB = await gpuEndpoint('b-train', b)

    // B alone: both GPUs, one of them borrowed.
    const bJobs = await Promise.all([1, 2, 3, 4, 5, 6].map(() => run(epB, b, 2_500)))
    await until(async () => placed(await workers(epB, b)).length === 2, 20_000, 'B on both GPUs')
    expect((await s.api('GET', '/v2/account/quotas', undefined, b)).body).toMatchObject({
      quotas: { gpus: { use: 2, limit: null } },
      fairShare: { guaranteedGpus: 1, weight: 1, borrowedGpus: 1 },
    })
    const bWorkers = new Set(placed(await workers(epB, b)).map((w: any) => w.id))

    // A needs its guaranteed GPU: one of B's workers retires after its job, and the GPU goes to A, not back to B.
    // Neither learns of the other on the way: no why-waiting or worker of one names the other's account or workers.
    const accountOf = async (key: string) => (await s.api('GET', '/v2/account/quotas', undefined, key)).body.accountId
    const [aId, bId] = [await accountOf(a), await accountOf(b)]
    const seen = { a: '', b: '' }
    // Long enough to still run while the checks below look at A's second job (a slow CI machine included).
    const a1 = await run(epA, a, 15_000)
    const aPlaced = await until(
      async () => {
        const [la, lb] = [await workers(epA, a), await workers(epB, b)]
        seen.a += JSON.stringify(la)
        seen.b += JSON.stringify(lb)
        const l = placed(la)
        return l.length === 1 ? l[0] : undefined
      },
      20_000,
      "A's worker placed on a GPU given back by B",
    )
    expect(aPlaced).toMatchObject({ gpuTypeId: L4, hostId: 'h1' })
    const bNow = await workers(epB, b)
    seen.b += JSON.stringify(bNow)
    expect(seen.b).not.toContain(aId)
    expect(seen.a).not.toContain(bId)
    for (const id of bWorkers) expect(seen.a).not.toContain(id)
    expect(placed(bNow).length).toBe(1)
    expect(bWorkers.has(placed(bNow)[0].id)).toBe(true)
    // Where B's jobs wait for a GPU it could only borrow, the reason given is the share (the freed GPU is A's). There
    // is none while B's remaining worker is about to take them (its throttled worker notwithstanding): seen once here.
    if (bNow.waiting.reason) expect(bNow.waiting.reason.message).toMatch(/guaranteed share|in use/)
    expect((await s.api('GET', '/v2/account/quotas', undefined, b)).body.fairShare.borrowedGpus).toBe(0)

    // A wants a second worker: its GPU quota (1) refuses it, and why-waiting says so with the numbers.
    const a2 = await run(epA, a, 10)
    const waiting = await until(
      async () => {
        const l = await workers(epA, a)
        return l.waiting.reason?.code === 'QUOTA' ? l.waiting.reason : undefined
      },
      10_000,
      'QUOTA in why-waiting',
    )
    expect(waiting.message).toBe(
      "1 wanted worker(s) wait for the account's quota: quota gpus (GPUs held by its workers and pods): 1 GPU in use + 1 requested would pass the limit of 1 GPU",
    )
    // The reason is computed when asked, from the workers as they are then: the job's status says it too.
    const status = await until(
      async () => {
        const st = (await jobCall(s, 'GET', `/v2/${epA}/status/${a2}`, undefined, { key: a })).body
        return st.waitingReason === waiting.message ? st : undefined
      },
      10_000,
      "the quota's reason in the waiting job's status",
    )
    expect(status).toMatchObject({ status: 'IN_QUEUE', waitingReason: waiting.message })
    // A GPU pod is refused the same way, as a problem naming the quota.
    const pod = await s.api('POST', '/v2/pods', podBody({ cpu: undefined, gpu: { id: L4, count: 1 } }), a)
    expect(pod.status).toBe(403)
    expect(pod.body.quota).toEqual({ name: 'gpus', use: 1, requested: 1, limit: 1 })
    expect((await final(epA, a1, a)).status).toBe('COMPLETED')
    expect((await final(epA, a2, a)).status).toBe('COMPLETED')

    // A spend limit A has already passed: nothing new starts, running work finishes (FINISH).
    await s.hangar.meter.flush()
    expect(
      (await s.api('PUT', '/v2/admin/accounts/team-a/quotas', { gpus: 1, guaranteedGpus: 1, spendPerHour: 0.000001 }))
        .status,
    ).toBe(200)
    await s.hangar.quotas.check()
    let view = (await s.api('GET', '/v2/account/quotas', undefined, a)).body
    if (view.spendLimitReached !== 'spendPerHour') {
      // Seen once in CI on PostgreSQL (no spend at all for A): say what the ledger and the workers held.
      const open = (await s.hangar.store.usage.listOpen()).filter((i) => i.accountId === view.accountId)
      const active = (await s.hangar.store.workers.listActive()).filter((w) => w.accountId === view.accountId)
      console.error('fairShare: no spend limit reached yet', JSON.stringify({ view, open, active }))
      await s.hangar.meter.flush()
      await s.hangar.quotas.check()
      view = (await s.api('GET', '/v2/account/quotas', undefined, a)).body
    }
    expect(view.spendLimitReached, JSON.stringify(view)).toBe('spendPerHour')
    expect(view.quotas.spendPerHour.use).toBeGreaterThan(0.000001)
    await until(async () => placed(await workers(epA, a)).length === 0, 20_000, "A's workers retired at the limit")
    const a3 = await run(epA, a, 10)
    const spent = await until(
      async () => {
        const l = await workers(epA, a)
        // The reason of the tick before may still be the GPU quota's; wait for the spend limit's.
        return l.waiting.reason?.code === 'QUOTA' && /spendPerHour/.test(l.waiting.reason.message)
          ? l.waiting.reason
          : undefined
      },
      10_000,
      'QUOTA for the spend limit',
    )
    expect(spent.message).toMatch(
      /^1 wanted worker\(s\) wait for the account's quota: quota spendPerHour \(spend this UTC hour\): \$[0-9.]+ spent has reached the limit of \$0\.000001/,
    )
    const refused = await s.api('POST', '/v2/pods', podBody(), a)
    expect(refused.status).toBe(403)
    expect(refused.body.quota).toMatchObject({ name: 'spendPerHour', requested: 0, limit: 0.000001 })
    // B is not held back by A's limits: its jobs all finish.
    for (const id of bJobs) expect((await final(epB, id, b)).status).toBe('COMPLETED')
    // Raising the limit lets A's waiting job run.
    expect((await s.api('PUT', '/v2/admin/accounts/team-a/quotas', { gpus: 1, guaranteedGpus: 1 })).status).toBe(200)
    await s.hangar.quotas.check()
    expect((await final(epA, a3, a)).status).toBe('COMPLETED')
  }, 120_000)

  it('gives a scarce GPU to the account holding the fewest GPUs per unit of weight', async () => {
    s = await startTestServer({ fleet: fleetOf(3), quotas: { checkIntervalMs: 200 }, jobs: { pingIntervalMs: 500 } })
    const c = await s.accountKey('team-c')
    const d = await s.accountKey('team-d')
    const e = await s.accountKey('team-e')
    // C and D each hold one GPU; D weighs 3, so it holds less per unit of weight and is first in line.
    expect((await s.api('PUT', '/v2/admin/accounts/team-d/quotas', { weight: 3 })).status).toBe(200)
    const epC = await gpuEndpoint('c-infer', c)
    const epD = await gpuEndpoint('d-infer', d)
    const blocker = await createPod(s, podBody({ cpu: undefined, gpu: { id: L4, count: 1 } }), e)
    await waitPod(s, blocker.id, 'RUNNING', e)
    const jobs = [await run(epC, c, 8_000), await run(epD, d, 8_000)]
    await until(
      async () => placed(await workers(epC, c)).length === 1 && placed(await workers(epD, d)).length === 1,
      20_000,
      'C and D on one GPU each',
    )
    // Each wants a second worker; none is free.
    jobs.push(await run(epC, c, 10), await run(epD, d, 10))
    await until(
      async () => (await workers(epC, c)).summary.throttled === 1 && (await workers(epD, d)).summary.throttled === 1,
      10_000,
      'both waiting for a GPU',
    )
    // The pod ends: one GPU is free, and D gets it.
    expect((await s.api('DELETE', `/v2/pods/${blocker.id}`, undefined, e)).status).toBe(204)
    await until(async () => placed(await workers(epD, d)).length === 2, 15_000, "D's second worker placed")
    expect(placed(await workers(epC, c)).length).toBe(1)
    expect((await workers(epC, c)).summary.throttled).toBe(1)
    for (const [i, id] of jobs.entries())
      expect((await final(i % 2 ? epD : epC, id, i % 2 ? d : c)).status).toBe('COMPLETED')
  }, 90_000)
})
