import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli/main.js'
import { createEndpoint, endpointBody } from './helpers/endpoints.js'
import { createPod, podBody, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const L4 = 'NVIDIA L4'

/** Two virtual L4s and a virtual A5000: a fleet small enough to run out of. */
const fleet = {
  detectGpus: false,
  hosts: [
    {
      id: 'h1',
      dataCenterId: 'LOCAL-1',
      vcpus: 16,
      memoryGb: 64,
      gpus: [{ typeId: L4, count: 2, cudaVersion: '12.4', virtual: true }],
    },
    {
      id: 'h2',
      dataCenterId: 'LOCAL-1',
      vcpus: 8,
      memoryGb: 32,
      gpus: [{ typeId: 'NVIDIA RTX A5000', count: 1, cudaVersion: '12.4', virtual: true }],
    },
  ],
}

describe('quotas: refusals where requests are made', () => {
  let s: TestServer
  let team: string
  let other: string
  beforeAll(async () => {
    s = await startTestServer({ fleet })
    team = await s.accountKey('team-q')
    other = await s.accountKey('team-free')
  }, 60_000)
  afterAll(() => s?.stop())

  const setQuotas = (account: string, body: Record<string, unknown>) =>
    s.api('PUT', `/v2/admin/accounts/${account}/quotas`, body)

  it('lets only the admin set quotas, and answers a bad one with the field at fault', async () => {
    expect((await setQuotas('team-q', { gpus: 1 })).status).toBe(200)
    const own = await s.api('PUT', '/v2/admin/accounts/team-q/quotas', { gpus: 9 }, team)
    expect(own.status).toBe(403)
    const bad = await setQuotas('team-q', { gpus: -1, weight: 0, cpus: 2 })
    expect(bad.status).toBe(422)
    expect(bad.headers.get('content-type')).toMatch(/problem\+json/)
    expect(bad.body.errors.join('\n')).toMatch(/gpus/)
    expect(bad.body.errors.join('\n')).toMatch(/weight/)
    expect(bad.body.errors.join('\n')).toMatch(/cpus/)
    expect((await setQuotas('no-such-team', { gpus: 1 })).status).toBe(404)
    // The bad request changed nothing.
    expect((await s.api('GET', '/v2/admin/accounts/team-q/quotas')).body.quotas.gpus).toEqual({ use: 0, limit: 1 })
  })

  it('refuses an endpoint create, and a PATCH raising workers.max, past the workers quota, naming the numbers', async () => {
    expect((await setQuotas('team-q', { workers: 3, gpus: 1 })).status).toBe(200)
    const first = await createEndpoint(
      s,
      endpointBody('hangar/echo:latest', { name: 'q-first', workers: { min: 0, max: 2 } }),
      team,
    )
    const second = await s.api(
      'POST',
      '/v2/serverless',
      endpointBody('hangar/echo:latest', { name: 'q-second', workers: { min: 0, max: 2 } }),
      team,
    )
    expect(second.status).toBe(403)
    expect(second.headers.get('content-type')).toMatch(/problem\+json/)
    expect(second.body.quota).toEqual({ name: 'workers', use: 2, requested: 2, limit: 3 })
    expect(second.body.detail).toBe(
      'endpoint create refused: quota workers (workers.max summed over its endpoints): 2 workers in use + 2 requested would pass the limit of 3 workers',
    )
    const raise = await s.api('PATCH', `/v2/serverless/${first.id}`, { workers: { min: 0, max: 4 } }, team)
    expect(raise.status).toBe(403)
    expect(raise.body.quota).toEqual({ name: 'workers', use: 2, requested: 2, limit: 3 })
    expect((await s.api('GET', `/v2/serverless/${first.id}`, undefined, team)).body.workers.max).toBe(2)
    // Up to the limit is fine, and so is lowering.
    expect((await s.api('PATCH', `/v2/serverless/${first.id}`, { workers: { min: 0, max: 3 } }, team)).status).toBe(200)
    expect((await s.api('PATCH', `/v2/serverless/${first.id}`, { workers: { min: 0, max: 1 } }, team)).status).toBe(200)
    // workers.min alone needing more GPUs than the GPU quota could never be met.
    const gpuMin = await s.api(
      'POST',
      '/v2/serverless',
      endpointBody('hangar/echo:latest', {
        name: 'q-min',
        cpu: undefined,
        gpu: { pools: ['ADA_24'], count: 1 },
        workers: { min: 2, max: 2 },
      }),
      team,
    )
    expect(gpuMin.status).toBe(403)
    expect(gpuMin.body.quota).toEqual({ name: 'gpus', use: 0, requested: 2, limit: 1 })
    // Another account has no quota: the same request passes.
    await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'free', workers: { min: 0, max: 5 } }), other)
  })

  it('refuses a network volume create or grow past the GB quota', async () => {
    expect((await setQuotas('team-q', { networkVolumeGb: 50 })).status).toBe(200)
    const v = await s.api('POST', '/v2/network-volumes', { name: 'a', size: 40, dataCenter: 'LOCAL-1' }, team)
    expect(v.status).toBe(201)
    const more = await s.api('POST', '/v2/network-volumes', { name: 'b', size: 20, dataCenter: 'LOCAL-1' }, team)
    expect(more.status).toBe(403)
    expect(more.body.quota).toEqual({ name: 'networkVolumeGb', use: 40, requested: 20, limit: 50 })
    const grow = await s.api('PATCH', `/v2/network-volumes/${v.body.id}`, { size: 60 }, team)
    expect(grow.status).toBe(403)
    expect(grow.body.quota).toEqual({ name: 'networkVolumeGb', use: 40, requested: 20, limit: 50 })
    expect((await s.api('PATCH', `/v2/network-volumes/${v.body.id}`, { size: 50 }, team)).status).toBe(200)
  })

  it('refuses a pod past the pods or GPU quota, and shows use against limits to the account', async () => {
    expect((await setQuotas('team-q', { pods: 1, gpus: 1, networkVolumeGb: 50 })).status).toBe(200)
    const big = await s.api('POST', '/v2/pods', podBody({ cpu: undefined, gpu: { id: L4, count: 2 } }), team)
    expect(big.status).toBe(403)
    expect(big.body.quota).toEqual({ name: 'gpus', use: 0, requested: 2, limit: 1 })
    const pod = await createPod(s, podBody({ cpu: undefined, gpu: { id: L4, count: 1 } }), team)
    await waitPod(s, pod.id, 'RUNNING', team)
    const second = await s.api('POST', '/v2/pods', podBody(), team)
    expect(second.status).toBe(403)
    expect(second.body.quota).toEqual({ name: 'pods', use: 1, requested: 1, limit: 1 })
    const view = (await s.api('GET', '/v2/account/quotas', undefined, team)).body
    expect(view).toMatchObject({
      accountName: 'team-q',
      quotas: {
        gpus: { use: 1, limit: 1 },
        workers: { use: 1, limit: null },
        pods: { use: 1, limit: 1 },
        networkVolumeGb: { use: 50, limit: 50 },
        spendPerHour: { limit: null },
      },
      atSpendLimit: 'FINISH',
      spendLimitReached: null,
      fairShare: { guaranteedGpus: null, weight: 1, borrowedGpus: 1 },
    })
    // The other account sees its own numbers only.
    const theirs = (await s.api('GET', '/v2/account/quotas', undefined, other)).body
    expect(theirs).toMatchObject({ accountName: 'team-free', quotas: { gpus: { use: 0, limit: null } } })
    expect((await s.api('DELETE', `/v2/pods/${pod.id}`, undefined, team)).status).toBe(204)
    expect((await s.api('DELETE', '/v2/admin/accounts/team-q/quotas')).status).toBe(204)
    expect((await s.api('DELETE', '/v2/admin/accounts/team-q/quotas')).status).toBe(404)
  }, 40_000)

  it('at a spend limit with STOP, stops the running pods (they keep their disk) and refuses new ones', async () => {
    const stopper = await s.accountKey('team-stop')
    const pod = await createPod(s, podBody({ name: 'spender' }), stopper)
    await waitPod(s, pod.id, 'RUNNING', stopper)
    await s.hangar.meter.flush()
    const set = await setQuotas('team-stop', { spendPerHour: 0.000001, atSpendLimit: 'STOP' })
    expect(set.status).toBe(200)
    // The pod's spend passes a micro-dollar within moments of running.
    await until(
      async () =>
        (await s.api('GET', '/v2/account/quotas', undefined, stopper)).body.spendLimitReached === 'spendPerHour',
      10_000,
      'the spend limit reached',
    )
    await s.hangar.quotas.check()
    await waitPod(s, pod.id, 'EXITED', stopper)
    const again = await s.api('POST', `/v2/pods/${pod.id}/action`, { action: 'start' }, stopper)
    expect(again.status).toBe(403)
    expect(again.body.quota).toMatchObject({ name: 'spendPerHour', limit: 0.000001 })
    const more = await s.api('POST', '/v2/pods', podBody({ name: 'more' }), stopper)
    expect(more.status).toBe(403)
    expect(more.body.detail).toMatch(/^pod create refused: quota spendPerHour \(spend this UTC hour\): \$/)
    // Removing the limit lets it start again.
    expect((await s.api('DELETE', '/v2/admin/accounts/team-stop/quotas')).status).toBe(204)
    expect((await s.api('POST', `/v2/pods/${pod.id}/action`, { action: 'start' }, stopper)).status).toBe(200)
    await waitPod(s, pod.id, 'RUNNING', stopper)
    expect((await s.api('DELETE', `/v2/pods/${pod.id}`, undefined, stopper)).status).toBe(204)
  }, 40_000)

  it("evicts the account's own parked worker when the GPU quota refuses a worker of another of its endpoints", async () => {
    const parker = await s.accountKey('team-park')
    expect((await setQuotas('team-park', { gpus: 1 })).status).toBe(200)
    const gpuEp = (name: string, pool: string) =>
      createEndpoint(
        s,
        endpointBody('hangar/echo:latest', {
          name,
          cpu: undefined,
          gpu: { pools: [pool], count: 1 },
          flashboot: 'FLASHBOOT',
          workers: { min: 0, max: 1, idleTimeout: 1 },
        }),
        parker,
      ).then((e) => e.id as string)
    // The parked worker's A5000 could not serve the second endpoint's L4 request: only the quota ties them.
    const [first, second] = [await gpuEp('park-first', 'AMPERE_24'), await gpuEp('park-second', 'ADA_24')]
    const runsync = (ep: string) =>
      s.api('POST', `/v2/${ep}/runsync`, { input: {} }, parker).then((r) => r.body as { status: string })
    expect((await runsync(first)).status).toBe('COMPLETED')
    await until(
      async () => (await s.api('GET', `/v2/serverless/${first}/workers`, undefined, parker)).body.parked.length === 1,
      15_000,
      'the first worker parked, holding its GPU',
    )
    // The parked worker holds the account's one GPU: it gives way rather than the job waiting for the quota.
    expect((await runsync(second)).status).toBe('COMPLETED')
    expect((await s.api('GET', `/v2/serverless/${first}/workers`, undefined, parker)).body.parked).toEqual([])
  }, 40_000)

  it('the CLI sets quotas keeping the ones not given, lists them and shows the caller its own', async () => {
    const out: string[] = []
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk))
      return true
    })
    const errs = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      out.push(String(chunk))
      return true
    })
    const cli = async (key: string, ...args: string[]) => {
      out.length = 0
      const code = await main([...args, '--url', s.url, '--api-key', key])
      return { code, text: out.join('') }
    }
    try {
      const first = await cli(s.adminKey, 'quotas', 'set', 'team-q', '--gpus', '2', '--spend-per-hour', '1.5')
      expect(first.code, first.text).toBe(0)
      expect((await cli(s.adminKey, 'quotas', 'set', 'team-q', '--pods', '3', '--weight', '2')).code).toBe(0)
      const got = JSON.parse((await cli(s.adminKey, 'quotas', 'get', 'team-q', '--json')).text)
      expect(got.quotas).toMatchObject({
        gpus: { limit: 2 },
        pods: { limit: 3 },
        spendPerHour: { limit: 1.5 },
        workers: { limit: null },
      })
      expect(got.fairShare.weight).toBe(2)
      const cleared = await cli(s.adminKey, 'quotas', 'set', 'team-q', '--gpus', 'none')
      expect(cleared.code, cleared.text).toBe(0)
      const mine = await cli(team, 'quotas', 'show')
      expect(mine.code).toBe(0)
      expect(mine.text).toMatch(/account: team-q/)
      expect(mine.text).toMatch(/spendPerHour\s+[0-9.]+\s+1\.5\n/)
      expect(mine.text).toMatch(/gpus\s+0\s+-/)
      expect((await cli(s.adminKey, 'quotas', 'list')).text).toMatch(/team-q/)
      // Bad input is refused before any request; a tenant key cannot set quotas.
      expect((await cli(s.adminKey, 'quotas', 'set', 'team-q', '--gpus', '-1')).code).not.toBe(0)
      expect((await cli(team, 'quotas', 'set', 'team-q', '--gpus', '9')).code).not.toBe(0)
      expect(JSON.parse((await cli(s.adminKey, 'quotas', 'get', 'team-q', '--json')).text).quotas.gpus.limit).toBeNull()
    } finally {
      write.mockRestore()
      errs.mockRestore()
    }
  })
})
