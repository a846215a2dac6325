import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { HOUR_MS } from '../src/domain/billing/money.js'
import { PriceBook } from '../src/domain/billing/PriceBook.js'
import type { UsageSubject } from '../src/domain/billing/usage.js'
import { parseConfig } from '../src/config.js'
import { silentLog } from '../src/services/log.js'
import { UsageMeter } from '../src/services/billing/UsageMeter.js'
import { SqliteStore } from '../src/store/sqlite/SqliteStore.js'
import { ManualClock } from './helpers/clock.js'

const T0 = Date.parse('2026-03-14T22:00:00Z')
const subject = (resourceId: string, partId: string | null, priceMicros = 3_600_000): UsageSubject => ({
  accountId: 'acc',
  product: partId ? 'serverless' : 'volume',
  component: partId ? 'cpu' : 'standard',
  resourceId,
  partId,
  gpuTypeId: null,
  quantity: 2,
  priceMicros,
  periodMs: HOUR_MS,
})

describe('the usage ledger (SQLite) and its recovery after a restart', () => {
  let dir: string
  let store: SqliteStore
  const clock = new ManualClock()
  const meter = () =>
    new UsageMeter({
      store,
      clock,
      log: silentLog,
      prices: new PriceBook({ gpu: () => undefined, cpu: () => undefined }, parseConfig({}).billing.prices),
      checkpointMs: 60_000,
    })
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-usage-'))
    store = new SqliteStore(join(dir, 'hangar.db'))
    clock.set(T0)
  })
  afterEach(async () => {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('rolls a closed interval up per UTC day, exactly its cost, and closes it only once', async () => {
    const i = await store.usage.open(subject('ep', 'w1'), T0)
    await store.usage.close([i.id], T0 + 5 * HOUR_MS)
    await store.usage.close([i.id], T0 + 9 * HOUR_MS)
    const days = (
      await store.usage.sumRollup({ products: ['serverless'] }, T0 - 24 * HOUR_MS, T0 + 48 * HOUR_MS, {
        size: 'day',
        by: ['resourceId'],
      })
    ).sort((a, b) => a.bucket - b.bucket)
    expect(days.map((d) => [new Date(d.bucket).toISOString(), d.amounts.cpu])).toEqual([
      ['2026-03-14T00:00:00.000Z', 2 * 3_600_000],
      ['2026-03-15T00:00:00.000Z', 3 * 3_600_000],
    ])
    expect(await store.usage.listOpen()).toEqual([])
    const overlapping = await store.usage.listOverlapping(
      { accountId: 'acc', products: ['serverless'] },
      T0 + 4 * HOUR_MS,
      T0 + 6 * HOUR_MS,
    )
    expect(overlapping.map((x) => [x.startedAt, x.endedAt])).toEqual([[T0, T0 + 5 * HOUR_MS]])
  })

  it('after a crash closes what no longer runs at the last alive note, resumes what runs, reprices and opens the rest', async () => {
    const before = meter()
    await before.recover([])
    await before.begin([subject('vol-kept', null)])
    await before.begin([subject('vol-repriced', null)])
    await before.begin([subject('ep', 'w-gone')])
    clock.advance(HOUR_MS)
    await store.usage.noteAlive(clock.now()) // the checkpoint timer's note
    clock.advance(10 * 60_000) // the crash: no stop(), nothing else written

    clock.advance(HOUR_MS) // down for an hour
    const after = meter()
    await after.recover([subject('vol-kept', null), subject('vol-repriced', null, 7_200_000), subject('vol-new', null)])
    const restart = clock.now()
    const all = await store.usage.listOverlapping(
      { accountId: 'acc', products: ['volume', 'serverless'] },
      0,
      Number.MAX_SAFE_INTEGER,
    )
    const byKey = (id: string) =>
      all
        .filter((i) => i.resourceId === id)
        .map((i) => [i.startedAt - T0, i.endedAt === null ? null : i.endedAt - T0, i.priceMicros])
    // The worker was last known alive at T0 + 1 h: billed up to there, not through the outage.
    expect(byKey('ep')).toEqual([[0, HOUR_MS, 3_600_000]])
    // A volume outlives the control plane: the same interval runs on, with no gap and nothing twice.
    expect(byKey('vol-kept')).toEqual([[0, null, 3_600_000]])
    // A new price applies from the restart on.
    expect(byKey('vol-repriced')).toEqual([
      [0, restart - T0, 3_600_000],
      [restart - T0, null, 7_200_000],
    ])
    expect(byKey('vol-new')).toEqual([[restart - T0, null, 3_600_000]])
  })

  it('after a clean stop closes nothing early and notes the stop time', async () => {
    const m = meter()
    await m.recover([])
    await m.begin([subject('ep', 'w1')])
    clock.advance(30 * 60_000)
    await m.end('serverless:ep:w1')
    await m.stop()
    expect(await store.usage.lastAlive()).toBe(T0 + 30 * 60_000)
    expect(
      (await store.usage.listOverlapping({ products: ['serverless'] }, 0, Number.MAX_SAFE_INTEGER)).map(
        (i) => i.endedAt! - i.startedAt,
      ),
    ).toEqual([30 * 60_000])
  })

  it('keeps a start before its stop when both are queued at once, and ignores a second start of the same thing', async () => {
    const m = meter()
    await m.recover([])
    void m.begin([subject('ep', 'w1')])
    void m.begin([subject('ep', 'w1')])
    clock.advance(1_000)
    void m.end('serverless:ep:w1')
    await m.flush()
    const rows = await store.usage.listOverlapping({ products: ['serverless'] }, 0, Number.MAX_SAFE_INTEGER)
    expect(rows.map((i) => [i.startedAt - T0, i.endedAt! - T0])).toEqual([[0, 1_000]])
  })
})
