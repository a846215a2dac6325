import { describe, expect, it } from 'vitest'
import { borrowedGpus, mayReclaim, reclaimFrom, shareOrder, type LendingWorker } from './fairShare.js'

const w = (id: string, accountId: string, over: Partial<LendingWorker> = {}): LendingWorker => ({
  id,
  accountId,
  gpus: 1,
  busy: false,
  startedAt: 0,
  ...over,
})

describe('fair share', () => {
  it('counts as borrowed only what is held beyond the guarantee', () => {
    expect(borrowedGpus({ held: 3, guaranteed: 1 })).toBe(2)
    expect(borrowedGpus({ held: 1, guaranteed: 2 })).toBe(0)
    expect(borrowedGpus({ held: 2, guaranteed: null })).toBe(2)
  })

  it('reclaims only within the guarantee', () => {
    expect(mayReclaim({ held: 1, guaranteed: 2 }, 1)).toBe(true)
    expect(mayReclaim({ held: 2, guaranteed: 2 }, 1)).toBe(false)
    expect(mayReclaim({ held: 0, guaranteed: null }, 1)).toBe(false)
  })

  it('takes back from the biggest borrower per weight, idle before busy, newest first, never below a guarantee', () => {
    const standings = [
      { accountId: 'a', held: 0, guaranteed: 2, weight: 1 },
      { accountId: 'b', held: 3, guaranteed: 1, weight: 1 },
      { accountId: 'c', held: 2, guaranteed: 1, weight: 1 },
    ]
    const workers = [
      w('b1', 'b', { busy: true, startedAt: 1 }),
      w('b2', 'b', { busy: true, startedAt: 3 }),
      w('b3', 'b', { busy: false, startedAt: 2 }),
      w('c1', 'c', { startedAt: 5 }),
    ]
    expect(reclaimFrom(1, 'a', standings, workers).map((x) => x.id)).toEqual(['b3'])
    // b lends 2 at most (it holds 3, 1 guaranteed); then c's one borrowed GPU.
    expect(reclaimFrom(3, 'a', standings, workers).map((x) => x.id)).toEqual(['b3', 'b2', 'c1'])
    // Not enough borrowed for 4: nothing is retired for a placement that would still fail.
    expect(reclaimFrom(4, 'a', standings, workers)).toEqual([])
    // Workers whose GPUs could not serve the request are left alone.
    expect(reclaimFrom(1, 'a', standings, workers, (x) => x.accountId === 'c').map((x) => x.id)).toEqual(['c1'])
  })

  it('orders scarce GPUs by GPUs held per weight', () => {
    expect(
      shareOrder([
        { accountId: 'a', held: 2, guaranteed: null, weight: 1 },
        { accountId: 'b', held: 2, guaranteed: null, weight: 4 },
        { accountId: 'c', held: 0, guaranteed: null, weight: 1 },
      ]),
    ).toEqual(['c', 'b', 'a'])
  })

  it('puts accounts below their guarantee before any other', () => {
    expect(
      shareOrder([
        { accountId: 'a', held: 0, guaranteed: null, weight: 1 },
        { accountId: 'b', held: 1, guaranteed: 2, weight: 1 },
      ]),
    ).toEqual(['b', 'a'])
  })
})
