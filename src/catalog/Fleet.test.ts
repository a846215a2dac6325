import { describe, expect, it } from 'vitest'
import { type Allocation, Fleet } from './Fleet.js'

const host = { id: 'h1', dataCenterId: 'DC-1', vcpus: 4, memoryGb: 8, gpus: [] as Fleet['hosts'][number]['gpus'] }
const gpuHost = {
  ...host,
  id: 'g1',
  gpus: [{ typeId: 'A100', cudaVersion: '12.4', virtual: false, indices: [0, 1] }],
}
const cpuAllocation = (id: string, vcpus: number): Allocation => ({
  id,
  hostId: 'h1',
  dataCenterId: 'DC-1',
  gpuTypeId: null,
  gpuIndices: [],
  cudaVersion: null,
  virtual: false,
  cpuFlavorId: 'cpu3c',
  vcpus,
  memoryGb: 2,
})
const gpuAllocation = (id: string, indices: number[]): Allocation => ({
  ...cpuAllocation(id, 0),
  hostId: 'g1',
  gpuTypeId: 'A100',
  gpuIndices: indices,
  cpuFlavorId: null,
  memoryGb: 0,
})

describe('Fleet.restore', () => {
  it('refuses what the estimate has no room for, unless the workload runs and so holds it', () => {
    const fleet = new Fleet([host])
    expect(fleet.restore(cpuAllocation('a', 3))).toBe(true)
    expect(fleet.restore(cpuAllocation('b', 2))).toBe(false)
    expect(fleet.restore(cpuAllocation('b', 2), { running: true })).toBe(true)
    // Counted: nothing more fits until one is released.
    expect(fleet.restore(cpuAllocation('c', 1))).toBe(false)
    fleet.release('b')
    expect(fleet.restore(cpuAllocation('c', 1))).toBe(true)
  })

  it('counts a running workload on a host missing from the estimate or marked down', () => {
    const fleet = new Fleet([])
    expect(fleet.restore(cpuAllocation('a', 2))).toBe(false)
    expect(fleet.restore(cpuAllocation('a', 2), { running: true })).toBe(true)
    const down = new Fleet([host])
    down.setDown('h1', 'not answering')
    expect(down.restore(cpuAllocation('a', 1))).toBe(false)
    expect(down.restore(cpuAllocation('a', 1), { running: true })).toBe(true)
  })

  it('never gives one GPU to two workloads, running or not', () => {
    const fleet = new Fleet([gpuHost])
    expect(fleet.restore(gpuAllocation('a', [1]))).toBe(true)
    expect(fleet.restore(gpuAllocation('b', [1]), { running: true })).toBe(false)
    // An index the estimate no longer lists (fewer GPUs read): refused unless running.
    expect(fleet.restore(gpuAllocation('c', [5]))).toBe(false)
    expect(fleet.restore(gpuAllocation('c', [5]), { running: true })).toBe(true)
    expect(fleet.restore(gpuAllocation('c', [0]), { running: true })).toBe(false) // the same id twice
  })
})
