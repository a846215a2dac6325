import { existsSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('network volumes', () => {
  let s: TestServer
  let alice: string
  let bob: string
  beforeAll(async () => {
    // Besides this machine's LOCAL-1 (STANDARD and HIGH_PERFORMANCE): one data center with only the
    // standard tier, and one with no volume storage at all.
    s = await startTestServer({
      catalog: {
        dataCenters: [
          {
            id: 'EU-1',
            name: 'Rack 1',
            region: 'EUROPE',
            globalNetwork: false,
            networkVolumeTypes: ['STANDARD'],
            compliance: [],
          },
          {
            id: 'EDGE-1',
            name: 'Edge',
            region: 'EUROPE',
            globalNetwork: false,
            networkVolumeTypes: [],
            compliance: [],
          },
        ],
      },
    })
    alice = await s.accountKey('vol-alice')
    bob = await s.accountKey('vol-bob')
  })
  afterAll(() => s.stop())

  const dirOf = (v: { id: string; dataCenter: string }) => join(s.dataDir, 'volumes', v.dataCenter, v.id)
  const create = async (body: object, key = alice) => {
    const r = await s.api(
      'POST',
      '/v2/network-volumes',
      { name: 'data', size: 50, dataCenter: 'LOCAL-1', ...body },
      key,
    )
    expect(r.status, JSON.stringify(r.body)).toBe(201)
    return r.body
  }

  it('creates a volume as a directory and deletes both', async () => {
    const r = await s.api('POST', '/v2/network-volumes', { name: 'models', size: 100, dataCenter: 'LOCAL-1' }, alice)
    expect(r.status).toBe(201)
    expect(r.body).toEqual({
      id: expect.stringMatching(/^vol_/),
      name: 'models',
      size: 100,
      dataCenter: 'LOCAL-1',
      type: 'STANDARD',
    })
    const dir = dirOf(r.body)
    expect(statSync(dir).isDirectory()).toBe(true)
    writeFileSync(join(dir, 'weights.bin'), 'x')

    expect((await s.api('GET', `/v2/network-volumes/${r.body.id}`, undefined, alice)).body).toEqual(r.body)
    const list = await s.api('GET', '/v2/network-volumes', undefined, alice)
    expect(list.body.networkVolumes).toContainEqual(r.body)

    const del = await s.api('DELETE', `/v2/network-volumes/${r.body.id}`, undefined, alice)
    expect(del.status).toBe(204)
    expect(existsSync(dir)).toBe(false)
    const gone = await s.api('GET', `/v2/network-volumes/${r.body.id}`, undefined, alice)
    expect(gone.status).toBe(404)
    expect(gone.body.detail).toBe(`network volume "${r.body.id}" was not found`)
  })

  it('defaults type to the data center primary tier and accepts another tier it offers', async () => {
    expect((await create({ dataCenter: 'EU-1' })).type).toBe('STANDARD')
    expect((await create({ type: 'HIGH_PERFORMANCE' })).type).toBe('HIGH_PERFORMANCE')
  })

  it('refuses an unknown data center, a tier it does not offer, and one without volumes with 400', async () => {
    const unknown = await s.api('POST', '/v2/network-volumes', { name: 'x', size: 10, dataCenter: 'NOWHERE-9' }, alice)
    expect(unknown.status).toBe(400)
    expect(unknown.body.errors).toEqual(['dataCenter: "NOWHERE-9" is not a data center in the catalog'])
    const tier = await s.api(
      'POST',
      '/v2/network-volumes',
      { name: 'x', size: 10, dataCenter: 'EU-1', type: 'HIGH_PERFORMANCE' },
      alice,
    )
    expect(tier.status).toBe(400)
    expect(tier.body.errors).toEqual([
      'type: "HIGH_PERFORMANCE" is not offered by data center "EU-1", which offers STANDARD',
    ])
    const none = await s.api('POST', '/v2/network-volumes', { name: 'x', size: 10, dataCenter: 'EDGE-1' }, alice)
    expect(none.body.errors).toEqual(['dataCenter: data center "EDGE-1" offers no network volumes'])
  })

  it.each([
    [{ name: 'x', size: 9, dataCenter: 'LOCAL-1' }, 'size: must be >= 10'],
    [{ name: 'x', size: 4097, dataCenter: 'LOCAL-1' }, 'size: must be <= 4096'],
    [{ name: 'x', size: 10.5, dataCenter: 'LOCAL-1' }, 'size: must be integer, got number'],
    [
      { name: 'x', size: 10, dataCenter: 'LOCAL-1', type: 'FAST' },
      'type: must be one of "STANDARD", "HIGH_PERFORMANCE", got "FAST"',
    ],
    [
      { name: 'x', size: 10, dataCenter: 'LOCAL-1', dataCenterId: 'LOCAL-1' },
      "$: additional properties 'dataCenterId' not allowed",
    ],
    [{ size: 10, dataCenter: 'LOCAL-1' }, 'name: is required'],
  ])('rejects create body %j with 422', async (body, error) => {
    const r = await s.api('POST', '/v2/network-volumes', body, alice)
    expect(r.status).toBe(422)
    expect(r.body.errors).toEqual([error])
  })

  it('renames and grows a volume, and refuses to shrink it with 400', async () => {
    const v = await create({ size: 50 })
    const grown = await s.api('PATCH', `/v2/network-volumes/${v.id}`, { name: 'bigger', size: 80 }, alice)
    expect(grown.status).toBe(200)
    expect(grown.body).toEqual({ ...v, name: 'bigger', size: 80 })
    expect((await s.api('PATCH', `/v2/network-volumes/${v.id}`, { size: 80 }, alice)).status).toBe(200)
    const shrink = await s.api('PATCH', `/v2/network-volumes/${v.id}`, { size: 40 }, alice)
    expect(shrink.status).toBe(400)
    expect(shrink.body.errors).toEqual(['size: 40 GB is smaller than the current 80 GB; network volumes can only grow'])
    expect((await s.api('GET', `/v2/network-volumes/${v.id}`, undefined, alice)).body.size).toBe(80)
  })

  it('keeps dataCenter and type immutable and rejects an empty PATCH with 422', async () => {
    const v = await create({})
    const moved = await s.api(
      'PATCH',
      `/v2/network-volumes/${v.id}`,
      { dataCenter: 'EU-1', type: 'HIGH_PERFORMANCE' },
      alice,
    )
    expect(moved.status).toBe(422)
    expect(moved.body.errors).toEqual([
      "$: additional properties 'dataCenter' not allowed",
      "$: additional properties 'type' not allowed",
    ])
    const empty = await s.api('PATCH', `/v2/network-volumes/${v.id}`, {}, alice)
    expect(empty.status).toBe(422)
    expect(empty.body.errors).toEqual(['$: must NOT have fewer than 1 properties'])
  })

  it('answers volumes of other accounts with 404 and leaves their files alone', async () => {
    const v = await create({})
    for (const [method, body] of [['GET'], ['PATCH', { name: 'mine' }], ['DELETE']] as const) {
      const r = await s.api(method, `/v2/network-volumes/${v.id}`, body, bob)
      expect(r.status, method).toBe(404)
    }
    expect((await s.api('GET', '/v2/network-volumes', undefined, bob)).body).toEqual({ networkVolumes: [] })
    expect(existsSync(dirOf(v))).toBe(true)
  })

  it('refuses to delete a volume an endpoint of the account uses', async () => {
    const v = await create({})
    const owner = (await s.api('GET', '/v2/admin/accounts')).body.accounts.find(
      (a: { name: string }) => a.name === 'vol-alice',
    ).id
    await s.hangar.store.endpoints.insert({
      id: 'ep_mounts',
      accountId: owner,
      createdAt: new Date().toISOString(),
      networkVolumes: [v.id],
    } as never)
    const r = await s.api('DELETE', `/v2/network-volumes/${v.id}`, undefined, alice)
    expect(r.status).toBe(400)
    expect(r.body.errors).toEqual([`networkVolume: "${v.id}" is attached to endpoint ep_mounts; detach it first`])
    expect(existsSync(dirOf(v))).toBe(true)
    await s.hangar.store.endpoints.delete('ep_mounts')
    expect((await s.api('DELETE', `/v2/network-volumes/${v.id}`, undefined, alice)).status).toBe(204)
    expect(existsSync(dirOf(v))).toBe(false)
  })
})
