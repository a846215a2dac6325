import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { UsageSubject } from '../../src/domain/billing/usage.js'
import type { Store } from '../../src/store/Store.js'
import type { RollupSum } from '../../src/store/UsageStore.js'

const H = 3_600_000
const DAY0 = Date.parse('2026-01-05T00:00:00.000Z')

/** Roll-up sums (which come in no particular order) by bucket, resource and GPU type. */
const ordered = (sums: RollupSum[]) =>
  sums.sort(
    (a, b) =>
      a.bucket - b.bucket ||
      (a.resourceId ?? '').localeCompare(b.resourceId ?? '') ||
      (a.gpuTypeId ?? '').localeCompare(b.gpuTypeId ?? ''),
  )

/** Usage ledger cases of the store contract; each case uses an account of its own on the shared store. */
export function usageCases(store: () => Store): void {
  describe('usage ledger', () => {
    const subject = (accountId: string, over: Partial<UsageSubject> = {}): UsageSubject => ({
      accountId,
      product: 'serverless',
      component: 'gpu',
      resourceId: 'ep1',
      partId: 'w1',
      gpuTypeId: 'NVIDIA L4',
      quantity: 2,
      priceMicros: 1_116_000 * 2,
      periodMs: H,
      ...over,
    })
    const account = () => `acc_${randomUUID().slice(0, 8)}`

    it('opens and closes intervals once, clamping an end before the start, and rolls their cost up per UTC day', async () => {
      const acc = account()
      const s = store()
      const a = await s.usage.open(subject(acc), DAY0 + 22 * H)
      const b = await s.usage.open(
        subject(acc, { component: 'disk', quantity: 10, priceMicros: 1_000_000, periodMs: 730 * H }),
        DAY0 + 22 * H,
      )
      const c = await s.usage.open(subject(acc, { resourceId: 'ep2', partId: 'w2' }), DAY0 + 23 * H)
      expect((await s.usage.listOpen()).filter((i) => i.accountId === acc).map((i) => i.id)).toEqual([a.id, b.id, c.id])
      await s.usage.close([a.id, b.id], DAY0 + 27 * H)
      await s.usage.close([a.id], DAY0 + 40 * H) // already closed: no change, nothing added twice
      await s.usage.close([c.id], DAY0) // before its start: an empty interval
      expect((await s.usage.listOpen()).filter((i) => i.accountId === acc)).toEqual([])
      const days = ordered(
        await s.usage.sumRollup({ accountId: acc, products: ['serverless'] }, DAY0, DAY0 + 7 * 24 * H, {
          size: 'day',
          by: ['resourceId', 'gpuTypeId'],
        }),
      )
      // Disk: 1,000,000 per 730 h; 2 h accrue 2739 (2739.7), 5 h 6849 (6849.3): the second day gets the difference.
      expect(days.map((d) => [d.bucket - DAY0, d.resourceId, d.gpuTypeId, d.amounts.gpu, d.amounts.disk])).toEqual([
        [0, 'ep1', 'NVIDIA L4', 2 * 2_232_000, 2739],
        [24 * H, 'ep1', 'NVIDIA L4', 3 * 2_232_000, 6849 - 2739],
      ])
      expect(
        await s.usage.resourcesWithUse({ accountId: acc, products: ['serverless'] }, DAY0, DAY0 + 7 * 24 * H),
      ).toEqual(['ep1'])
      const c2 = (
        await s.usage.listOverlapping(
          { accountId: acc, products: ['serverless'], resourceId: 'ep2' },
          0,
          DAY0 + 100 * H,
        )
      )[0]
      expect([c2.startedAt, c2.endedAt]).toEqual([DAY0 + 23 * H, DAY0 + 23 * H])
    })

    it('lists intervals overlapping a half-open range, open ones included, by account, product, resource, part and GPU', async () => {
      const acc = account()
      const s = store()
      const early = await s.usage.open(subject(acc), DAY0)
      await s.usage.close([early.id], DAY0 + H)
      const late = await s.usage.open(subject(acc, { partId: 'w2', gpuTypeId: null, component: 'cpu' }), DAY0 + 2 * H)
      await s.usage.open(
        subject(acc, { product: 'volume', component: 'standard', resourceId: 'vol', partId: null, gpuTypeId: null }),
        DAY0,
      )
      await s.usage.open(subject(account()), DAY0)
      const ids = async (f: Partial<Parameters<Store['usage']['listOverlapping']>[0]>, from: number, to: number) =>
        (await s.usage.listOverlapping({ accountId: acc, products: ['serverless'], ...f }, from, to)).map((i) => i.id)
      expect(await ids({}, DAY0, DAY0 + 3 * H)).toEqual([early.id, late.id])
      expect(await ids({}, DAY0 + H, DAY0 + 2 * H)).toEqual([]) // both edges are exclusive where they touch
      expect(await ids({ partId: 'w2' }, 0, DAY0 + 9 * H)).toEqual([late.id])
      expect(await ids({ gpuTypeId: 'NVIDIA L4' }, 0, DAY0 + 9 * H)).toEqual([early.id])
      expect(await ids({ resourceId: 'nope' }, 0, DAY0 + 9 * H)).toEqual([])
      expect(
        (await s.usage.listOverlapping({ accountId: acc, products: ['volume', 'serverless'] }, 0, DAY0 + 9 * H))
          .map((i) => i.product)
          .sort(),
      ).toEqual(['serverless', 'serverless', 'volume'])
    })

    it('writes finished intervals in one go, roll-up included, and inside a transaction only if it commits', async () => {
      const acc = account()
      const s = store()
      await s.usage.insertClosed([{ ...subject(acc), startedAt: DAY0, endedAt: DAY0 + 48 * H }])
      const days = ordered(
        await s.usage.sumRollup({ accountId: acc, products: ['serverless'] }, DAY0, DAY0 + 48 * H, {
          size: 'day',
          by: [],
        }),
      )
      expect(days.map((d) => [d.resourceId, d.gpuTypeId, d.amounts.gpu])).toEqual([
        [null, null, 24 * 2_232_000],
        [null, null, 24 * 2_232_000],
      ])
      await expect(
        s.transaction(async (tx) => {
          await tx.usage.open(subject(acc, { resourceId: 'rolled-back' }), DAY0)
          throw new Error('undo')
        }),
      ).rejects.toThrow('undo')
      expect((await s.usage.listOpen()).filter((i) => i.resourceId === 'rolled-back')).toEqual([])
    })

    it('sums the roll-up into UTC weeks (from Monday), months and years, grouped as asked', async () => {
      const acc = account()
      const s = store()
      // 2026-01-31 (Saturday) 12:00 to 2026-02-02 (Monday) 12:00: two weeks, two months, one year.
      const from = Date.parse('2026-01-31T12:00:00Z')
      await s.usage.insertClosed([
        { ...subject(acc, { partId: 'w1', priceMicros: 1_000 }), startedAt: from, endedAt: from + 48 * H },
        {
          ...subject(acc, { resourceId: 'ep2', partId: 'w2', gpuTypeId: 'NVIDIA A40', priceMicros: 1_000 }),
          startedAt: from,
          endedAt: from + 48 * H,
        },
      ])
      const sums = async (size: 'week' | 'month' | 'year', by: Array<'resourceId' | 'gpuTypeId'>) =>
        ordered(
          await s.usage.sumRollup(
            { accountId: acc, products: ['serverless'] },
            Date.parse('2026-01-01T00:00:00Z'),
            Date.parse('2026-03-01T00:00:00Z'),
            { size, by },
          ),
        ).map((r) => [new Date(r.bucket).toISOString().slice(0, 10), r.resourceId, r.gpuTypeId, r.amounts.gpu])
      expect(await sums('week', [])).toEqual([
        ['2026-01-26', null, null, 2 * 36_000],
        ['2026-02-02', null, null, 2 * 12_000],
      ])
      expect(await sums('month', ['gpuTypeId'])).toEqual([
        ['2026-01-01', null, 'NVIDIA A40', 12_000],
        ['2026-01-01', null, 'NVIDIA L4', 12_000],
        ['2026-02-01', null, 'NVIDIA A40', 36_000],
        ['2026-02-01', null, 'NVIDIA L4', 36_000],
      ])
      expect(await sums('year', ['resourceId'])).toEqual([
        ['2026-01-01', 'ep1', null, 48_000],
        ['2026-01-01', 'ep2', null, 48_000],
      ])
    })

    it('names the resources with use in a range, whole months and partial ones alike', async () => {
      const acc = account()
      const s = store()
      const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`)
      const use = (resourceId: string, from: string, to: string) => ({
        ...subject(acc, { resourceId, product: 'pod' as const, partId: null }),
        startedAt: day(from),
        endedAt: day(to),
      })
      await s.usage.insertClosed([
        use('a', '2026-01-10', '2026-01-12'),
        use('a', '2026-03-10', '2026-03-12'),
        use('b', '2026-02-25', '2026-02-27'),
        use('c', '2026-04-20', '2026-04-21'),
      ])
      const names = async (from: string, to: string) =>
        (await s.usage.resourcesWithUse({ accountId: acc, products: ['pod'] }, day(from), day(to))).sort()
      expect(await names('2026-01-01', '2027-01-01')).toEqual(['a', 'b', 'c'])
      expect(await names('2026-02-10', '2026-04-05')).toEqual(['a', 'b'])
      expect(await names('2026-02-01', '2026-02-20')).toEqual([])
      expect(await names('2026-03-11', '2026-04-21')).toEqual(['a', 'c'])
      expect(
        (
          await s.usage.resourcesWithUse(
            { accountId: acc, products: ['pod'], gpuTypeId: 'NVIDIA L4' },
            day('2026-01-01'),
            day('2027-01-01'),
          )
        ).sort(),
      ).toEqual(['a', 'b', 'c'])
    })

    it('names the resources with use in a range of hours, and only those whose use cost something when asked', async () => {
      const acc = account()
      const s = store()
      const at = (iso: string) => Date.parse(iso)
      const use = (resourceId: string, priceMicros: number, from: string, to: string) => ({
        ...subject(acc, { resourceId, product: 'pod' as const, partId: null, priceMicros }),
        startedAt: at(from),
        endedAt: at(to),
      })
      await s.usage.insertClosed([
        use('paid', 3_600_000, '2026-01-31T22:30:00Z', '2026-01-31T23:30:00Z'),
        use('free', 0, '2026-02-01T00:10:00Z', '2026-03-01T01:00:00Z'),
        use('late', 3_600_000, '2026-03-01T05:00:00Z', '2026-03-01T06:00:00Z'),
      ])
      const names = async (from: string, to: string, costly = false) =>
        (await s.usage.resourcesWithUse({ accountId: acc, products: ['pod'] }, at(from), at(to), { costly })).sort()
      // Hours at either end, the month of February between.
      expect(await names('2026-01-31T23:00:00Z', '2026-03-01T05:00:00Z')).toEqual(['free', 'paid'])
      expect(await names('2026-01-31T23:00:00Z', '2026-03-01T05:00:00Z', true)).toEqual(['paid'])
      expect(await names('2026-02-01T00:00:00Z', '2026-03-01T05:00:00Z')).toEqual(['free'])
      expect(await names('2026-03-01T01:00:00Z', '2026-03-01T06:00:00Z')).toEqual(['late'])
    })

    it('remembers when the control plane was last alive', async () => {
      const s = store()
      await s.usage.noteAlive(DAY0 + 5)
      expect(await s.usage.lastAlive()).toBe(DAY0 + 5)
      await s.usage.noteAlive(DAY0 + 9)
      expect(await s.usage.lastAlive()).toBe(DAY0 + 9)
    })
  })
}
