import { describe, expect, it } from 'vitest'
import { Fleet, type Allocation, type Host } from '../../catalog/Fleet.js'
import { type ParkedWorker, WorkerPlacer } from './WorkerPlacer.js'

const POOLS = new Map([
  ['ADA_24', ['NVIDIA L4']],
  ['AMPERE_48', ['NVIDIA A40']],
])

function host(id: string, gpus: Array<[typeId: string, count: number]>, dataCenterId = 'DC-1'): Host {
  return {
    id,
    dataCenterId,
    vcpus: 8,
    memoryGb: 32,
    gpus: gpus.map(([typeId, count]) => ({
      typeId,
      cudaVersion: '12.4',
      virtual: false,
      indices: [...Array(count).keys()],
    })),
  }
}

function gpuEndpoint(id: string, pools: string[], dataCenterIds: string[] = []) {
  return {
    id,
    accountId: 'a1',
    gpu: { pools, count: 1, allowedCudaVersions: [], minCudaVersion: null, excludedTypes: [] },
    dataCenterIds,
  }
}

/** A placer over a real fleet ledger, with parked workers that hold capacity in it and a log of evictions. */
function setup(hosts: Host[]) {
  const fleet = new Fleet(hosts)
  const parked = new Map<string, ParkedWorker>()
  const evicted: string[] = []
  const placer = new WorkerPlacer({
    fleet,
    pools: () => POOLS,
    parked: () => [...parked.values()],
    evict: (w, why) => {
      expect(why).toContain('evicted from parking')
      parked.delete(w.id)
      evicted.push(w.id)
    },
  })
  /** A worker of endpoint `ep` placed, then parked at monotonic `since`. */
  const park = (id: string, ep: string, pools: string[], since: number, priority = false) => {
    const allocation = placer.reserve(id, gpuEndpoint(ep, pools)) as Allocation
    expect(allocation.hostId).toBeDefined()
    parked.set(id, { id, allocation, parkedPriority: priority, phaseSince: since })
  }
  return { fleet, placer, park, parked, evicted }
}

describe('WorkerPlacer', () => {
  it('takes free capacity without touching parked workers', () => {
    const { placer, park, evicted } = setup([host('h1', [['NVIDIA L4', 2]])])
    park('p1', 'other', ['ADA_24'], 1)
    const a = placer.reserve('w1', gpuEndpoint('e', ['ADA_24']))
    expect(a).toMatchObject({ hostId: 'h1', gpuTypeId: 'NVIDIA L4' })
    expect(evicted).toEqual([])
  })

  it('evicts FLASHBOOT workers before PRIORITY_FLASHBOOT ones, the longest parked first, until the worker fits', () => {
    const { placer, park, evicted, fleet } = setup([host('h1', [['NVIDIA L4', 3]])])
    park('priority-old', 'other', ['ADA_24'], 1, true)
    park('plain-new', 'other', ['ADA_24'], 30)
    park('plain-old', 'other', ['ADA_24'], 20)
    const a = placer.reserve('w1', gpuEndpoint('e', ['ADA_24']))
    expect(a).toMatchObject({ hostId: 'h1', gpuTypeId: 'NVIDIA L4' })
    expect(evicted).toEqual(['plain-old'])
    expect(fleet.allocation('plain-old')).toBeUndefined()
    expect(fleet.allocation('priority-old')).toBeDefined()
    const b = placer.reserve('w2', gpuEndpoint('e', ['ADA_24']))
    expect(b).toMatchObject({ gpuTypeId: 'NVIDIA L4' })
    expect(evicted).toEqual(['plain-old', 'plain-new'])
    placer.reserve('w3', gpuEndpoint('e', ['ADA_24']))
    expect(evicted).toEqual(['plain-old', 'plain-new', 'priority-old'])
  })

  it('never evicts a parked worker whose capacity would not fit (another GPU type, another data center)', () => {
    const { placer, park, evicted } = setup([host('h1', [['NVIDIA L4', 1]]), host('h2', [['NVIDIA A40', 1]], 'DC-2')])
    park('l4', 'other', ['ADA_24'], 1)
    park('a40', 'other', ['AMPERE_48'], 2)
    const r = placer.reserve('w1', gpuEndpoint('e', ['AMPERE_48'], ['DC-1']))
    expect(r).toHaveProperty('reason')
    expect(evicted).toEqual([])
  })

  it('says why nothing fits when no parked worker makes room', () => {
    const { placer } = setup([host('h1', [['NVIDIA L4', 1]])])
    expect(placer.reserve('w1', gpuEndpoint('e', ['ADA_24']))).toMatchObject({ gpuTypeId: 'NVIDIA L4' })
    const r = placer.reserve('w2', gpuEndpoint('e', ['ADA_24']))
    expect(r).toEqual({ reason: expect.stringContaining('in use') })
  })
})
