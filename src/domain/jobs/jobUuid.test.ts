import { describe, expect, it } from 'vitest'
import { jobUuid } from './jobUuid.js'

describe('jobUuid', () => {
  it('is a version 7 UUID carrying the time in milliseconds', () => {
    const id = jobUuid(Date.UTC(2026, 10, 22, 7, 35, 17, 393))
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(Date.UTC(2026, 10, 22, 7, 35, 17, 393))
  })

  it('sorts by submission time and never repeats', () => {
    const ids = Array.from({ length: 5_000 }, (_, i) => jobUuid(1_800_000_000_000 + Math.floor(i / 10)))
    expect(new Set(ids).size).toBe(ids.length)
    const prefixes = ids.map((id) => id.slice(0, 13))
    expect([...prefixes].sort()).toEqual(prefixes)
  })
})
