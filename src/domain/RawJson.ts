/**
 * A JSON value kept as the text it arrived in: job input is only stored and handed to a worker, so it is
 * checked (syntax, depth, finite numbers) but never parsed into objects and written out again. That keeps a
 * 20 MB body at about its own size in memory, and keeps it byte for byte (an integer beyond 2^53 is not
 * rounded on the way to the worker). A job input is held as the UTF-8 bytes that came in (a view into the
 * request body, no copy) and stored and handed to the worker as bytes: `text` decodes it on each use, so a
 * caller that only writes it out should take `bytes`.
 */
export class RawJson {
  private readonly source: string | Buffer

  constructor(
    /** The JSON text, or its UTF-8 bytes, already validated. */
    source: string | Buffer,
  ) {
    this.source = source
  }

  /** The JSON text (decoded from the bytes on each call when held as bytes). */
  get text(): string {
    return typeof this.source === 'string' ? this.source : this.source.toString('utf8')
  }

  /** The UTF-8 bytes: the ones held, or the text encoded. */
  get bytes(): Buffer {
    return typeof this.source === 'string' ? Buffer.from(this.source, 'utf8') : this.source
  }

  /** Whether it is held as bytes (then `bytes` costs no copy). */
  get isBytes(): boolean {
    return typeof this.source !== 'string'
  }
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

/**
 * The JSON text of `v` after `prefix`, or undefined where JSON.stringify writes nothing (undefined, functions,
 * symbols). With `pieces`, a RawJson held as bytes is not decoded: the text written so far is flushed to `pieces` (the
 * caller's text so far comes back as the prefix of what it returns: each level hands its own prefix down).
 */
function write(v: unknown, pieces?: Array<string | Buffer>, prefix = ''): string | undefined {
  if (typeof v !== 'object' || v === null) {
    const text = JSON.stringify(v)
    return text === undefined ? undefined : prefix + text
  }
  if (v instanceof RawJson) {
    if (!pieces || !v.isBytes) return prefix + v.text
    pieces.push(prefix, v.bytes)
    return ''
  }
  if (Array.isArray(v)) {
    let out = prefix + '['
    for (let i = 0; i < v.length; i++) {
      const before = out + (i ? ',' : '')
      out = write(v[i], pieces, before) ?? before + 'null'
    }
    return out + ']'
  }
  const proto = Object.getPrototypeOf(v) as object | null
  if ((proto !== Object.prototype && proto !== null) || typeof (v as { toJSON?: unknown }).toJSON === 'function') {
    const text = JSON.stringify(v, (_k, x: unknown) => (x instanceof RawJson ? JSON.parse(x.text) : x)) as
      | string
      | undefined
    return text === undefined ? undefined : prefix + text
  }
  let out = prefix + '{'
  let first = true
  for (const key of Object.keys(v)) {
    // What JSON.stringify leaves out (undefined, functions, symbols) comes back undefined: not even the key is written.
    const next = write(
      (v as Record<string, unknown>)[key],
      pieces,
      out + (first ? '' : ',') + JSON.stringify(key) + ':',
    )
    if (next === undefined) continue
    out = next
    first = false
  }
  return out + '}'
}

/**
 * stringifyWithRaw as pieces: the JSON text between RawJsons held as bytes, and those bytes themselves, in
 * order, so a large input is written to the socket as the buffer it is held in rather than copied into a
 * string first. Returns a single string when no RawJson in `value` is held as bytes.
 */
export function piecesWithRaw(value: unknown): string | Array<string | Buffer> {
  const pieces: Array<string | Buffer> = []
  const text = write(value, pieces) ?? 'null'
  if (pieces.length === 0) return text
  pieces.push(text)
  return pieces
}

/** stringifyWithRaw as one payload: a string, or when a RawJson is held as bytes, one buffer of the pieces. */
export function serializeWithRaw(value: unknown): string | Buffer {
  const pieces = piecesWithRaw(value)
  return typeof pieces === 'string'
    ? pieces
    : Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p)))
}
