import { describe, expect, it } from 'vitest'
import { Slots } from './Slots.js'

describe('Slots', () => {
  it('lets `limit` holders in and the next waiter in as one releases, in order', async () => {
    const slots = new Slots(2)
    const order: number[] = []
    const a = await slots.acquire()
    await slots.acquire()
    const c = slots.acquire().then((release) => (order.push(3), release))
    const d = slots.acquire().then((release) => (order.push(4), release))
    expect(slots.load).toEqual({ held: 2, waiting: 2 })
    a()
    a() // a second release of the same slot gives nothing away
    await c
    expect(order).toEqual([3])
    expect(slots.load).toEqual({ held: 2, waiting: 1 })
    ;(await c)()
    await d
    expect(order).toEqual([3, 4])
  })

  it('takes a waiter whose start is called off out of the line', async () => {
    const slots = new Slots(1)
    const release = await slots.acquire()
    const abort = new AbortController()
    const waiting = slots.acquire(abort.signal)
    abort.abort()
    await expect(waiting).rejects.toThrow('called off')
    expect(slots.load).toEqual({ held: 1, waiting: 0 })
    release()
    expect(slots.load).toEqual({ held: 0, waiting: 0 })
  })
})
