import { describe, expect, it } from 'vitest'
import { piecesWithRaw, RawJson, stringifyWithRaw } from './RawJson.js'

describe('stringifyWithRaw', () => {
  it('writes what JSON.stringify writes for values without RawJson', () => {
    const date = new Date(0)
    const values: unknown[] = [
      null,
      0,
      -1.5,
      'a"b\\c\u0001é',
      true,
      [],
      {},
      [1, undefined, () => 1, 'x'],
      { a: 1, b: undefined, c: () => 1, d: [null, { e: 'f' }], g: date, h: NaN, i: { j: { k: [[]] } } },
      Object.assign(Object.create(null), { z: 1 }),
      [{ toJSON: () => ({ t: 1 }) }],
    ]
    for (const v of values) expect(stringifyWithRaw(v)).toBe(JSON.stringify(v))
    expect(stringifyWithRaw(undefined)).toBe('null')
  })

  it('writes each RawJson as its own text, byte for byte, wherever it sits', () => {
    const big = '{"n":12345678901234567890,"s":"\\u00e9"}'
    const value = [
      { id: 'a', input: new RawJson(big), policy: { ttl: 1 } },
      { id: 'b', input: new RawJson('[1, 2]'), output: { stream: [new RawJson('"x"')] } },
    ]
    expect(stringifyWithRaw(value)).toBe(
      `[{"id":"a","input":${big},"policy":{"ttl":1}},{"id":"b","input":[1, 2],"output":{"stream":["x"]}}]`,
    )
    expect(stringifyWithRaw(new RawJson('{ }'))).toBe('{ }')
  })

  it('writes a RawJson held as bytes as those bytes: the same text, the same buffer handed on', () => {
    const bytes = Buffer.from('{"data":"é","n":9007199254740993}')
    const value = [
      { id: 'a', input: new RawJson(bytes), skip: undefined, policy: { ttl: 1 } },
      { id: 'b', input: new RawJson('[1]'), f: () => 1 },
      undefined,
    ]
    const pieces = piecesWithRaw(value)
    expect(Array.isArray(pieces)).toBe(true)
    expect((pieces as Array<string | Buffer>).find((p) => Buffer.isBuffer(p))).toBe(bytes)
    const whole = Buffer.concat(
      (pieces as Array<string | Buffer>).map((p) => (typeof p === 'string' ? Buffer.from(p) : p)),
    ).toString()
    expect(whole).toBe(`[{"id":"a","input":${bytes.toString()},"policy":{"ttl":1}},{"id":"b","input":[1]},null]`)
    expect(stringifyWithRaw(value)).toBe(whole)
    expect(piecesWithRaw({ id: 'c', input: new RawJson('{}') })).toBe('{"id":"c","input":{}}')
  })
})
