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
 * its fields). The RawJson values are swapped for unique marker strings and spliced back in.
 */
export function stringifyWithRaw(value: unknown): string {
  const raws: string[] = []
  const marker = `\u0001raw${Math.random().toString(36).slice(2)}:`
  const text = JSON.stringify(value, (_key, v: unknown) => (v instanceof RawJson ? marker + (raws.push(v.text) - 1) : v))
  if (raws.length === 0) return text
  // The marker's control character is written as \u0001 inside a JSON string.
  const quoted = JSON.stringify(marker).slice(1, -1)
  const parts = text.split(new RegExp(`"${quoted.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}(\\d+)"`))
  let out = parts[0]
  for (let i = 1; i < parts.length; i += 2) out += raws[Number(parts[i])] + parts[i + 1]
  return out
}
