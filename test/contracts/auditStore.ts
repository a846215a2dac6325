import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { NewAuditRecord } from '../../src/store/AuditStore.js'
import type { Store } from '../../src/store/Store.js'

const T0 = Date.parse('2026-03-02T10:00:00.000Z')

/** Audit log cases of the store contract; each case uses accounts of its own on the shared store. */
export function auditCases(store: () => Store): void {
  describe('audit log', () => {
    const account = () => `acc_${randomUUID().slice(0, 8)}`
    const entry = (accountId: string, i: number, over: Partial<NewAuditRecord> = {}): NewAuditRecord => ({
      at: T0 + i * 1000,
      actor: { type: 'key', id: `key_${accountId}`, accountId },
      action: i % 2 ? 'pod.create' : 'endpoint.update',
      resourceType: i % 2 ? 'pod' : 'endpoint',
      resourceId: `r${i}`,
      outcome: 'success',
      status: 200,
      ip: '127.0.0.1',
      requestId: `req-${i}`,
      ...over,
    })

    it('appends entries and reads them newest first, with every field as written', async () => {
      const s = store()
      const a = account()
      const written = [entry(a, 1), entry(a, 2, { outcome: 'refused', status: 403, resourceId: null, ip: null })]
      for (const e of written) await s.audit.append(e)
      const read = await s.audit.query({ accountId: a, limit: 10 })
      expect(read.map(({ seq, ...rest }) => rest)).toEqual([written[1], written[0]])
      expect(read[0].seq).toBeGreaterThan(read[1].seq)
    })

    it('filters by account, actor, action (exact or prefix), resource and time, and pages by seq', async () => {
      const s = store()
      const a = account()
      const b = account()
      for (let i = 0; i < 10; i++) await s.audit.append(entry(a, i))
      await s.audit.append(entry(b, 3, { actor: { type: 'member', id: 'mem_1', accountId: b } }))
      const ids = async (q: Parameters<Store['audit']['query']>[0]) => (await s.audit.query(q)).map((r) => r.resourceId)
      expect(await ids({ accountId: a, limit: 100 })).toEqual([
        'r9',
        'r8',
        'r7',
        'r6',
        'r5',
        'r4',
        'r3',
        'r2',
        'r1',
        'r0',
      ])
      expect(await ids({ accountId: a, action: 'pod.create', limit: 100 })).toEqual(['r9', 'r7', 'r5', 'r3', 'r1'])
      expect(await ids({ accountId: a, action: 'endpoint.', limit: 2 })).toEqual(['r8', 'r6'])
      expect(await ids({ accountId: a, action: 'endpoint', limit: 2 })).toEqual([])
      expect(await ids({ accountId: a, resourceType: 'pod', resourceId: 'r3', limit: 100 })).toEqual(['r3'])
      expect(await ids({ accountId: a, since: T0 + 2000, until: T0 + 5000, limit: 100 })).toEqual(['r4', 'r3', 'r2'])
      expect(await ids({ actorId: 'mem_1', limit: 100 })).toEqual(['r3'])
      expect((await s.audit.query({ actorId: 'mem_1', limit: 1 }))[0].actor).toEqual({
        type: 'member',
        id: 'mem_1',
        accountId: b,
      })
      const first = await s.audit.query({ accountId: a, limit: 4 })
      const next = await s.audit.query({ accountId: a, limit: 4, beforeSeq: first[3].seq })
      expect(next.map((r) => r.resourceId)).toEqual(['r5', 'r4', 'r3', 'r2'])
    })

    it('never updates an entry, and prunes only entries older than the cut-off', async () => {
      const s = store()
      const a = account()
      await s.audit.append(entry(a, 0, { at: 1_000 }))
      await s.audit.append(entry(a, 1, { at: 2_000 }))
      expect(await s.audit.prune(1_500)).toBeGreaterThanOrEqual(1)
      expect((await s.audit.query({ accountId: a, limit: 10 })).map((r) => r.at)).toEqual([2_000])
    })
  })
}
