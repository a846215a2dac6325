import { describe, expect, it } from 'vitest'
import { splitChunk } from './streamChunks.js'

describe('splitChunk', () => {
  it('keeps a chunk within the limit as it is', () => {
    expect(splitChunk({ a: 1 }, 100)).toEqual([{ a: 1 }])
  })
  it('cuts a long string into pieces within the limit that join back', () => {
    const text = 'é'.repeat(100) + 'x'.repeat(100)
    const pieces = splitChunk(text, 50) as string[]
    expect(pieces.length).toBeGreaterThan(1)
    for (const p of pieces) expect(Buffer.byteLength(JSON.stringify(p))).toBeLessThanOrEqual(50)
    expect(pieces.join('')).toBe(text)
  })
  it('sends a large object as its JSON text in pieces', () => {
    const value = { list: Array.from({ length: 50 }, (_, i) => i) }
    const pieces = splitChunk(value, 40) as string[]
    expect(JSON.parse(pieces.join(''))).toEqual(value)
  })
})
