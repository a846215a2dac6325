import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { startTestServer, type TestServer } from './helpers/server.js'

// Releases: every create and every PATCH that changes what workers run makes one.
describe('GET /v2/serverless/{id}/releases', () => {
  let s: TestServer
  let key: string
  const clock = new ManualClock()
  beforeAll(async () => {
    s = await startTestServer({}, { clock })
    key = await s.accountKey('release-co')
  })
  afterAll(() => s.stop())

  const body = {
    name: 'ep',
    type: 'QUEUE',
    scaling: { type: 'QUEUE_DELAY', queueDelay: 4 },
    image: 'img:1',
    env: { MODEL: 'a' },
    gpu: { pools: ['ADA_24'] },
  }
  async function endpoint() {
    const r = await s.api('POST', '/v2/serverless', body, key)
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body
  }
  const releases = async (id: string) => {
    const r = await s.api('GET', `/v2/serverless/${id}/releases`, undefined, key)
    expect(r.status).toBe(200)
    return r.body
  }
  const patch = async (id: string, b: object) => {
    const r = await s.api('PATCH', `/v2/serverless/${id}`, b, key)
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    return r.body
  }

  it('records the create as version 1 with what it set, and no rollout while there are no workers', async () => {
    const ep = await endpoint()
    expect(await releases(ep.id)).toEqual({
      endpointVersion: 1,
      rollout: { inProgress: false, workersOnLatest: 0, workersTotal: 0, percentOnLatest: 0 },
      releases: [
        {
          id: expect.any(String),
          version: 1,
          source: 'MANUAL',
          buildId: null,
          createdByUserId: expect.any(String),
          createdAt: ep.createdAt,
          workerCount: 0,
          diff: [
            { field: 'image', old: null, new: 'img:1' },
            { field: 'env.MODEL', old: null, new: 'a' },
            { field: 'disk', old: null, new: 10 },
            { field: 'gpu.pools', old: null, new: ['ADA_24'] },
            { field: 'gpu.count', old: null, new: 1 },
          ],
        },
      ],
    })
  })

  it('adds a release, newest first, for each change to what workers run, with dotted fields', async () => {
    const ep = await endpoint()
    clock.advance(1000)
    await patch(ep.id, { image: 'img:2' })
    clock.advance(1000)
    await patch(ep.id, { env: { MODEL: 'b', EXTRA: '1' }, gpu: { count: 2 } })
    clock.advance(1000)
    await patch(ep.id, { cmd: ['python', 'x.py'], networkVolumes: [], dataCenterIds: ['LOCAL-1'] })
    const list = await releases(ep.id)
    expect(list.endpointVersion).toBe(4)
    expect(list.releases.map((r: { version: number }) => r.version)).toEqual([4, 3, 2, 1])
    expect(list.releases[0].diff).toEqual([
      { field: 'cmd', old: [], new: ['python', 'x.py'] },
      { field: 'dataCenterIds', old: [], new: ['LOCAL-1'] },
    ])
    expect(list.releases[1].diff).toEqual([
      { field: 'env.MODEL', old: 'a', new: 'b' },
      { field: 'env.EXTRA', old: null, new: '1' },
      { field: 'gpu.count', old: 1, new: 2 },
    ])
    expect(list.releases[2].diff).toEqual([{ field: 'image', old: 'img:1', new: 'img:2' }])
    expect(Date.parse(list.releases[0].createdAt) - Date.parse(list.releases[2].createdAt)).toBe(2000)
  })

  it('makes no release for name, workers, scaling, timeout or flashboot changes, nor for a PATCH that changes nothing', async () => {
    const ep = await endpoint()
    await patch(ep.id, {
      name: 'renamed',
      workers: { max: 5 },
      scaling: { type: 'REQUEST_COUNT', requestCount: 2 },
      timeout: 1000,
      flashboot: 'FLASHBOOT',
    })
    await patch(ep.id, { image: 'img:1', env: { MODEL: 'a' } })
    await patch(ep.id, { args: 'python  x.py' })
    await patch(ep.id, { args: 'python x.py' })
    const list = await releases(ep.id)
    expect(list.endpointVersion).toBe(2)
    expect(list.releases.map((r: { diff: Array<{ field: string }> }) => r.diff.map((d) => d.field))).toEqual([
      ['cmd'],
      expect.any(Array),
    ])
  })

  it('makes no release for a rejected PATCH', async () => {
    const ep = await endpoint()
    expect(
      (await s.api('PATCH', `/v2/serverless/${ep.id}`, { image: 'img:9', workers: { min: 9, max: 1 } }, key)).status,
    ).toBe(400)
    expect((await releases(ep.id)).endpointVersion).toBe(1)
    expect((await s.api('GET', `/v2/serverless/${ep.id}`, undefined, key)).body.image).toBe('img:1')
  })
})
