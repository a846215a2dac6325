import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { localHosts } from '../src/catalog/CatalogService.js'
import { parseNvidiaSmi } from '../src/catalog/detect.js'
import { parseConfig } from '../src/config.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('catalog on the default fleet (no real GPU)', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({
      catalog: {
        dataCenters: [
          {
            id: 'EU-DE-1',
            name: 'Frankfurt rack',
            region: 'EUROPE',
            countryCode: 'DE',
            globalNetwork: true,
            networkVolumeTypes: ['STANDARD'],
            compliance: ['GDPR', 'ISO_IEC_27001'],
          },
        ],
      },
    })
  })
  afterAll(() => s.stop())

  it('lists GPU types with the required fields and marks virtual stock', async () => {
    const r = await s.api('GET', '/v2/catalog/gpus')
    expect(r.status).toBe(200)
    const g4090 = r.body.gpus.find((g: any) => g.id === 'NVIDIA GeForce RTX 4090')
    expect(g4090).toMatchObject({
      pool: 'ADA_24',
      manufacturer: 'NVIDIA',
      memory: 24,
      secure: true,
      price: { serverless: expect.any(Number) },
      maxCount: { secure: 8 },
      virtual: true,
    })
    expect(g4090).not.toHaveProperty('availability')
    const b200 = r.body.gpus.find((g: any) => g.id === 'NVIDIA B200')
    expect(b200.pool).toBeNull()
    expect(b200.price).not.toHaveProperty('serverless')
    expect(b200).not.toHaveProperty('virtual')
  })

  it('adds availability, per data center stock and CUDA versions with include=AVAILABILITY', async () => {
    const r = await s.api(
      'GET',
      '/v2/catalog/gpus/NVIDIA%20GeForce%20RTX%204090?include=AVAILABILITY&product=SERVERLESS',
    )
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      availability: 'LOW',
      stock: { total: 2, free: 2 },
      cudaVersions: [{ version: '12.4', available: true }],
    })
    expect(r.body.dataCenters).toEqual([
      { id: 'LOCAL-1', name: 'This machine', availability: 'LOW' },
      { id: 'EU-DE-1', name: 'Frankfurt rack', availability: 'NONE' },
    ])
    const three = await s.api(
      'GET',
      '/v2/catalog/gpus/NVIDIA%20GeForce%20RTX%204090?include=AVAILABILITY&product=SERVERLESS&count=3',
    )
    expect(three.body.availability).toBe('NONE')
    const noCudaHost = await s.api(
      'GET',
      '/v2/catalog/gpus/NVIDIA%20GeForce%20RTX%204090?include=AVAILABILITY&product=POD&minCudaVersion=12.8',
    )
    expect(noCudaHost.body.availability).toBe('NONE')
    const h100 = await s.api(
      'GET',
      '/v2/catalog/gpus/NVIDIA%20H100%2080GB%20HBM3?include=AVAILABILITY&product=POD&minCudaVersion=12.8',
    )
    expect(h100.body.availability).toBe('LOW')
  })

  it('enforces the parameter rules: product with include (400), include-only options (400), malformed values (422)', async () => {
    const noProduct = await s.api('GET', '/v2/catalog/gpus?include=AVAILABILITY')
    expect(noProduct.status).toBe(400)
    expect(noProduct.body.errors).toEqual(['product: is required with include'])
    const productAlone = await s.api('GET', '/v2/catalog/gpus?product=POD')
    expect(productAlone.status).toBe(400)
    const both = await s.api(
      'GET',
      '/v2/catalog/gpus?include=AVAILABILITY&product=POD&cudaVersions=12.4&minCudaVersion=12',
    )
    expect(both.status).toBe(400)
    expect(both.body.errors).toEqual(['cudaVersions: cannot be combined with minCudaVersion'])
    const badCountry = await s.api('GET', '/v2/catalog/gpus?include=AVAILABILITY&product=POD&countryCodes=de')
    expect(badCountry.status).toBe(422)
    const badProduct = await s.api('GET', '/v2/catalog/gpus?include=AVAILABILITY&product=TOASTER')
    expect(badProduct.status).toBe(422)
  })

  it('drops GPUs with no data center in the requested countries', async () => {
    const r = await s.api('GET', '/v2/catalog/gpus?include=AVAILABILITY&product=POD&countryCodes=DE')
    expect(r.status).toBe(200)
    expect(r.body.gpus).toEqual([])
  })

  it('lists CPU flavors, with availability from free vCPUs and memory', async () => {
    const r = await s.api('GET', '/v2/catalog/cpus')
    expect(r.body.cpus.map((c: any) => c.id)).toEqual(['cpu3c', 'cpu3g', 'cpu3m', 'cpu5c', 'cpu5g', 'cpu5m'])
    const one = await s.api('GET', '/v2/catalog/cpus/cpu3c?include=AVAILABILITY&product=SERVERLESS&vcpuCount=2')
    expect(one.body.availability).not.toBe('NONE')
    expect(one.body.stock.totalVcpu).toBeGreaterThan(0)
    const notPow2 = await s.api('GET', '/v2/catalog/cpus/cpu3c?include=AVAILABILITY&product=SERVERLESS&vcpuCount=6')
    expect(notPow2.status).toBe(422)
    const tooBig = await s.api('GET', '/v2/catalog/cpus/cpu3m?include=AVAILABILITY&product=SERVERLESS&vcpuCount=64')
    expect(tooBig.body.availability).toBe('NONE')
  })

  it('filters data centers by region, compliance (AND), volume types and global networking', async () => {
    const all = await s.api('GET', '/v2/catalog/datacenters')
    expect(all.body.dataCenters.map((d: any) => d.id)).toEqual(['LOCAL-1', 'EU-DE-1'])
    expect(
      (await s.api('GET', '/v2/catalog/datacenters?regions=EUROPE,ASIA')).body.dataCenters.map((d: any) => d.id),
    ).toEqual(['EU-DE-1'])
    expect(
      (await s.api('GET', '/v2/catalog/datacenters?compliance=GDPR,ISO_IEC_27001')).body.dataCenters.map(
        (d: any) => d.id,
      ),
    ).toEqual(['EU-DE-1'])
    expect((await s.api('GET', '/v2/catalog/datacenters?compliance=GDPR,HIPAA')).body.dataCenters).toEqual([])
    expect(
      (await s.api('GET', '/v2/catalog/datacenters?networkVolumeTypes=HIGH_PERFORMANCE')).body.dataCenters.map(
        (d: any) => d.id,
      ),
    ).toEqual(['LOCAL-1'])
    expect(
      (await s.api('GET', '/v2/catalog/datacenters?globalNetwork=true')).body.dataCenters.map((d: any) => d.id),
    ).toEqual(['EU-DE-1'])
    const mars = await s.api('GET', '/v2/catalog/datacenters?regions=EUROPE,MARS')
    expect(mars.status).toBe(422)
    expect(mars.body.errors).toEqual([
      expect.stringMatching(/^query\.regions: unknown value "MARS"; expected NORTH_AMERICA, /),
    ])
  })

  it('adds GPU and CPU availability to data centers on request', async () => {
    const r = await s.api('GET', '/v2/catalog/datacenters/LOCAL-1?include=GPU_AVAILABILITY,CPU_AVAILABILITY')
    expect(r.body.gpuAvailability).toEqual(
      expect.arrayContaining([{ id: 'NVIDIA A40', name: 'A40', availability: 'LOW' }]),
    )
    expect(r.body.gpuAvailability).toHaveLength(6)
    expect(r.body.cpuAvailability.map((c: any) => c.id)).toContain('cpu5g')
    expect((await s.api('GET', '/v2/catalog/datacenters/LOCAL-1')).body).not.toHaveProperty('gpuAvailability')
    expect((await s.api('GET', '/v2/catalog/datacenters/NOWHERE')).status).toBe(404)
  })

  it('shrinks stock as capacity is placed, read from the one fleet ledger', async () => {
    const fleet = s.hangar.catalog.fleet
    const a = fleet.reserve('test-alloc', {
      dataCenterIds: [],
      gpu: { typeIds: ['NVIDIA A40'], count: 1, allowedCudaVersions: [], minCudaVersion: null },
    })
    expect(a).toHaveProperty('gpuTypeId', 'NVIDIA A40')
    try {
      const r = await s.api('GET', '/v2/catalog/gpus/NVIDIA%20A40?include=AVAILABILITY&product=SERVERLESS')
      expect(r.body).toMatchObject({ availability: 'NONE', stock: { total: 1, free: 0 } })
    } finally {
      fleet.release('test-alloc')
    }
    const after = await s.api('GET', '/v2/catalog/gpus/NVIDIA%20A40?include=AVAILABILITY&product=SERVERLESS')
    expect(after.body.stock).toEqual({ total: 1, free: 1 })
  })
})

describe('fleet detection', () => {
  const fleet = parseConfig({}).fleet

  it('uses real GPUs reported by nvidia-smi and then adds no virtual ones', () => {
    const gpus = parseNvidiaSmi(
      '0, NVIDIA H100 80GB HBM3\n1, NVIDIA H100 80GB HBM3\n',
      '| NVIDIA-SMI 550.54   Driver Version: 550.54   CUDA Version: 12.4 |',
    )
    expect(gpus).toEqual([
      { typeId: 'NVIDIA H100 80GB HBM3', count: 2, cudaVersion: '12.4', virtual: false, indices: [0, 1] },
    ])
    const [host] = localHosts(fleet, { cores: 16, memoryGb: 128, gpus })
    expect(host.gpus).toEqual([
      { typeId: 'NVIDIA H100 80GB HBM3', cudaVersion: '12.4', virtual: false, indices: [0, 1] },
    ])
  })

  it('adds virtual GPUs only when no real GPU is found, unless turned off', () => {
    const [host] = localHosts(fleet, { cores: 2, memoryGb: 24, gpus: [] })
    expect(host.gpus.length).toBeGreaterThan(0)
    expect(host.gpus.every((g) => g.virtual)).toBe(true)
    expect(host.vcpus).toBe(16)
    const [bare] = localHosts({ ...fleet, virtualGpus: false }, { cores: 2, memoryGb: 24, gpus: [] })
    expect(bare.gpus).toEqual([])
  })
})

describe('catalog on a machine with a real GPU', () => {
  it('offers the real GPU, not virtual ones', async () => {
    const s = await startTestServer({
      fleet: {
        hosts: [
          {
            id: 'box',
            dataCenterId: 'LOCAL-1',
            vcpus: 8,
            memoryGb: 32,
            gpus: [{ typeId: 'NVIDIA L4', count: 1, cudaVersion: '12.2' }],
          },
        ],
      },
    })
    try {
      const r = await s.api('GET', '/v2/catalog/gpus?include=AVAILABILITY&product=SERVERLESS')
      const withStock = r.body.gpus.filter((g: any) => g.stock.total > 0)
      expect(withStock.map((g: any) => g.id)).toEqual(['NVIDIA L4'])
      expect(r.body.gpus.some((g: any) => g.virtual)).toBe(false)
    } finally {
      await s.stop()
    }
  })
})
