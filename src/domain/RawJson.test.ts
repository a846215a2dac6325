import { describe, expect, it } from 'vitest'
import { RawJson, stringifyWithRaw } from './RawJson.js'

describe('stringifyWithRaw', () => {
  it('writes what JSON.stringify writes for values without RawJson', () => {
    const date = new Date(0)
    const values: unknown[] = [
      null, 0, -1.5, 'a"b\\c\u0001é', true, [], {}, [1, undefined, () => 1, 'x'],
      { a: 1, b: undefined, c: () => 1, d: [null, { e: 'f' }], g: date, h: NaN, i: { j: { k: [[]] } } },
      Object.assign(Object.create(null), { z: 1 }), [{ toJSON: () => ({ t: 1 }) }],
    ]
    for (const v of values) expect(stringifyWithRaw(v)).toBe(JSON.stringify(v))
    expect(stringifyWithRaw(undefined)).toBe('null')
  })

  it('writes each RawJson as its own text, byte for byte, wherever it sits', () => {
    const big = '{"n":12345678901234567890,"s":"\\u00e9"}'
    const value = [{ id: 'a', input: new RawJson(big), policy: { ttl: 1 } }, { id: 'b', input: new RawJson('[1, 2]'), output: { stream: [new RawJson('"x"')] } }]
    expect(stringifyWithRaw(value)).toBe(`[{"id":"a","input":${big},"policy":{"ttl":1}},{"id":"b","input":[1, 2],"output":{"stream":["x"]}}]`)
    expect(stringifyWithRaw(new RawJson('{ }'))).toBe('{ }')
  })
})
