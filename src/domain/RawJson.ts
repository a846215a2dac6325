/**
 * A JSON value kept as the text it arrived in: job input is only stored and handed to a worker, so it is
 * checked (syntax, depth, finite numbers) but never parsed into objects and written out again. That keeps a
 * 20 MB body at about its own size in memory, and keeps it byte for byte (an integer beyond 2^53 is not
 * rounded on the way to the worker).
 */
export class RawJson {
  constructor(
    /** The JSON text, already validated. */
    readonly text: string,
  ) {}
}

/** The JSON text of a value: a RawJson as it came, anything else through JSON.stringify. */
export function jsonText(v: unknown): string {
  return v instanceof RawJson ? v.text : JSON.stringify(v)
}

/** The value itself: a RawJson parsed, anything else as it is (for the few readers that look inside a result). */
export function jsonValue(v: unknown): unknown {
  return v instanceof RawJson ? JSON.parse(v.text) : v
}

/**
 * JSON.stringify that writes each RawJson inside `value` as its own text (JSON.stringify alone would write
 * its fields). Plain objects and arrays are walked here (what JSON.stringify would write of them, keys in
 * the same order); everything else (strings, numbers, Dates and other objects with toJSON) is written by
 * JSON.stringify itself, a RawJson inside such an object as its parsed value (none of the documents written
 * this way holds one: they are plain objects). Job documents are shallow, their large parts are the RawJson texts, so the walk
 * is short (a replacer function called for every key cost more, and a marker had to be spliced back).
 */
export function stringifyWithRaw(value: unknown): string {
  return write(value) ?? 'null'
}

/** The JSON text of `v`, or undefined where JSON.stringify writes nothing (undefined, functions, symbols). */
function write(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null) return JSON.stringify(v)
  if (v instanceof RawJson) return v.text
  if (Array.isArray(v)) {
    let out = '['
    for (let i = 0; i < v.length; i++) out += (i ? ',' : '') + (write(v[i]) ?? 'null')
    return out + ']'
  }
  const proto = Object.getPrototypeOf(v) as object | null
  if ((proto !== Object.prototype && proto !== null) || typeof (v as { toJSON?: unknown }).toJSON === 'function') return JSON.stringify(v, (_k, x: unknown) => (x instanceof RawJson ? JSON.parse(x.text) : x))
  let out = '{'
  let first = true
  for (const key of Object.keys(v)) {
    const text = write((v as Record<string, unknown>)[key])
    if (text === undefined) continue
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + text
    first = false
  }
  return out + '}'
}
