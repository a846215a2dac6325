import { describe, expect, it } from 'vitest'
import { RawJson } from '../domain/RawJson.js'
import { decodeJsonArrayBody, decodeJsonBody } from './jsonBody.js'
import { scanJson, type JsonMember, type JsonSpan } from './jsonScan.js'

const bytes = (text: string) => Buffer.from(text, 'utf8')
/** The listed members as `element:key=text` (element left out for top-level members). */
const show = (text: string, members: JsonMember[]) =>
  members.map(
    (m) => `${m.element === undefined ? '' : `${m.element}:`}${m.key}=${bytes(text).toString('utf8', m.start, m.end)}`,
  )
const spans = (text: string, elements: JsonSpan[]) => elements.map((e) => bytes(text).toString('utf8', e.start, e.end))

describe('scanJson', () => {
  it('lists the members of the top-level object, not those of nested objects', () => {
    const text = ' { "a" : 1, "b":{"c":[1,{"d":2}]}, "é":"x" } '
    const members: JsonMember[] = []
    scanJson(bytes(text), 10, members)
    expect(show(text, members)).toEqual(['a=1', 'b={"c":[1,{"d":2}]}', 'é="x"'])
  })

  it('lists the elements of a top-level array and the members of each object element, tagged with its index', () => {
    const text =
      '[{"id":"a","output":{"x":[1,2]}}, 7 ,{"id":"b","output":"t"},{},[{"id":"nested"}],{"id":"c","output":{"id":"inner"}}]'
    const members: JsonMember[] = []
    const elements: JsonSpan[] = []
    scanJson(bytes(text), 10, members, elements)
    expect(spans(text, elements)).toEqual([
      '{"id":"a","output":{"x":[1,2]}}',
      '7',
      '{"id":"b","output":"t"}',
      '{}',
      '[{"id":"nested"}]',
      '{"id":"c","output":{"id":"inner"}}',
    ])
    expect(show(text, members)).toEqual([
      '0:id="a"',
      '0:output={"x":[1,2]}',
      '2:id="b"',
      '2:output="t"',
      '5:id="c"',
      '5:output={"id":"inner"}',
    ])
  })

  it('lists nothing in element mode when the top-level value is not an array', () => {
    const members: JsonMember[] = []
    const elements: JsonSpan[] = []
    scanJson(bytes('{"a":{"b":1}}'), 10, members, elements)
    expect(members).toEqual([])
    expect(elements).toEqual([])
    scanJson(bytes('[]'), 10, members, elements)
    expect(elements).toEqual([])
  })

  it('still refuses malformed text and nesting past the limit in element mode', () => {
    expect(() => scanJson(bytes('[{"id":"a"},]'), 10, [], [])).toThrow(/malformed JSON body/)
    expect(() => scanJson(bytes('[{"id":"a"}'), 10, [], [])).toThrow(/unexpected end/)
    expect(() => scanJson(bytes('[{"a":[[1]]}]'), 3, [], [])).toThrow(/nested deeper than 3/)
    expect(() => scanJson(bytes('[{"a":[1]}]'), 3, [], [])).not.toThrow()
  })
})

describe('decodeJsonArrayBody', () => {
  const o = { maxDepth: 10, rawField: 'output', rawAnyType: true, parse: JSON.parse }

  it("keeps each object element's raw field as its text and parses the rest", () => {
    const out = decodeJsonArrayBody(
      bytes('[{"id":"a","output":{"n":12345678901234567890},"stopPod":true},{"id":"b","output":[1, 2]},{"id":"c"}]'),
      o,
    )
    expect(out).toEqual([
      { id: 'a', output: new RawJson(Buffer.from('{"n":12345678901234567890}')), stopPod: true },
      { id: 'b', output: new RawJson(Buffer.from('[1, 2]')) },
      { id: 'c' },
    ])
  })

  it('hands back elements that are not objects, and a top-level value that is not an array, parsed', () => {
    expect(decodeJsonArrayBody(bytes('[{"id":"a"},"x",null,[1]]'), o)).toEqual([{ id: 'a' }, 'x', null, [1]])
    expect(decodeJsonArrayBody(bytes('{"id":"a","output":1}'), o)).toEqual({ id: 'a', output: 1 })
    expect(decodeJsonArrayBody(bytes('  '), o)).toBeUndefined()
  })

  it('refuses a __proto__ key in an element', () => {
    expect(() => decodeJsonArrayBody(bytes('[{"id":"a"},{"__proto__":{"x":1}}]'), o)).toThrow(/__proto__/)
  })

  it("leaves decodeJsonBody's top-level object members as they were", () => {
    expect(decodeJsonBody(bytes('{"output":{"a":1},"error":"e"}'), o)).toEqual({
      output: new RawJson(Buffer.from('{"a":1}')),
      error: 'e',
    })
  })
})
