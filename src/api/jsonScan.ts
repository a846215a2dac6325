/** Why a JSON text was refused; `message` is written for the client. */
export class JsonSyntaxError extends Error {
  readonly statusCode = 400
}

/** Where a value lies in the text (byte offsets, `end` exclusive). */
export interface JsonSpan {
  start: number
  end: number
}

/**
 * One member of a listed object: its key and where its value lies in the text. The listed objects are the
 * top-level object, or, when the elements of a top-level array are listed, each object element.
 */
export interface JsonMember extends JsonSpan {
  key: string
  /** When elements are listed: the index of the array element whose member this is. */
  element?: number
}

const OBJ = 1
const ARR = 2

/**
 * Checks that `b` holds exactly one JSON value, nested at most `maxDepth` deep, whose numbers are all finite,
 * without building it: one pass over the bytes with an explicit stack, so depth costs no call stack and a
 * 20 MB string costs no copy. When `members` is given, the top-level object's members are listed in it (so
 * a caller can keep one of them as raw text). When `elements` is given, the elements of a top-level array are
 * listed in it, and `members` lists the members of each object element instead, tagged with the element's
 * index (so each object of a batch can keep a field raw); a top-level value of another type lists nothing.
 * Throws JsonSyntaxError naming the offset.
 */
export function scanJson(b: Uint8Array, maxDepth: number, members?: JsonMember[], elements?: JsonSpan[]): void {
  const n = b.length
  const stack = new Uint8Array(maxDepth + 1)
  // The depth of the objects whose members are listed: the top-level object, or the elements of the top-level array.
  const memberDepth = elements ? 2 : 1
  // At memberDepth: whether the container there is one of those objects (an object element, not a nested one).
  const listed = () => stack[memberDepth] === OBJ && (memberDepth === 1 || stack[1] === ARR)
  let depth = 0
  let i = ws(b, 0)
  let key = ''
  let valueStart = 0
  let elementStart = 0
  const fail = (what: string): never => {
    throw new JsonSyntaxError(`malformed JSON body: ${what} at byte ${i}`)
  }
  for (;;) {
    // A value starts at i.
    i = ws(b, i)
    if (i >= n) fail('unexpected end')
    if (depth === memberDepth && members) valueStart = i
    if (depth === 1 && elements) elementStart = i
    const c = b[i]
    let ended = true
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (depth === maxDepth)
        throw new JsonSyntaxError(`the JSON body is nested deeper than ${maxDepth} levels of objects and arrays`)
      stack[++depth] = c === 0x7b ? OBJ : ARR
      i = ws(b, i + 1)
      if (b[i] === (c === 0x7b ? 0x7d : 0x5d)) {
        i++
        depth--
      } else if (c === 0x7b) {
        i = memberKey(i)
        ended = false
      } else ended = false
    } else if (c === 0x22) i = string(b, i, fail)
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) i = number(b, i, fail)
    else if (c === 0x74) i = literal(b, i, 'true', fail)
    else if (c === 0x66) i = literal(b, i, 'false', fail)
    else if (c === 0x6e) i = literal(b, i, 'null', fail)
    else fail(`unexpected ${describe(c)}`)
    // A value ended at i: continue its container, closing as many as end here.
    while (ended) {
      if (depth === 0) {
        i = ws(b, i)
        if (i < n) fail(`unexpected ${describe(b[i])} after the JSON value`)
        return
      }
      if (members && depth === memberDepth && listed())
        members.push(
          memberDepth === 1
            ? { key, start: valueStart, end: i }
            : { key, start: valueStart, end: i, element: elements!.length },
        )
      if (depth === 1 && elements && stack[1] === ARR) elements.push({ start: elementStart, end: i })
      i = ws(b, i)
      const d = b[i]
      if (d === 0x2c /* , */) {
        i = stack[depth] === OBJ ? memberKey(ws(b, i + 1)) : i + 1
        ended = false
      } else if ((d === 0x7d && stack[depth] === OBJ) || (d === 0x5d && stack[depth] === ARR)) {
        i++
        depth--
      } else fail(i >= n ? 'unexpected end' : `unexpected ${describe(d)}`)
    }
  }

  /** Reads `"key" :` at i; returns the index after the colon. */
  function memberKey(at: number): number {
    i = at
    if (b[i] !== 0x22) fail('expected a string key')
    const end = string(b, i, fail)
    if (members && depth === memberDepth && listed())
      key = JSON.parse(Buffer.from(b.buffer, b.byteOffset + i, end - i).toString('utf8')) as string
    i = ws(b, end)
    if (b[i] !== 0x3a) fail('expected ":"')
    return i + 1
  }
}

function ws(b: Uint8Array, i: number): number {
  let c = b[i]
  while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++i]
  return i
}

/** The index after the string starting at i (a quote). */
function string(b: Uint8Array, i: number, fail: (what: string) => never): number {
  const n = b.length
  for (i++; i < n; i++) {
    const c = b[i]
    if (c === 0x22) return i + 1
    if (c === 0x5c) {
      const e = b[++i]
      if (e === 0x75 /* u */) {
        for (let k = 1; k <= 4; k++) if (!isHex(b[i + k])) fail('bad \\u escape')
        i += 4
      } else if (
        !(e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74)
      )
        fail('bad escape')
    } else if (c < 0x20) fail('control character in a string')
  }
  return fail('unterminated string')
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

/** The index after the number starting at i; numbers that overflow to Infinity are refused. */
function number(b: Uint8Array, i: number, fail: (what: string) => never): number {
  const start = i
  if (b[i] === 0x2d) i++
  if (b[i] === 0x30) i++
  else if (b[i] >= 0x31 && b[i] <= 0x39) while (b[i] >= 0x30 && b[i] <= 0x39) i++
  else fail('bad number')
  if (b[i] === 0x2e) {
    i++
    if (!(b[i] >= 0x30 && b[i] <= 0x39)) fail('bad number')
    while (b[i] >= 0x30 && b[i] <= 0x39) i++
  }
  let exponent = false
  if (b[i] === 0x65 || b[i] === 0x45) {
    exponent = true
    i++
    if (b[i] === 0x2b || b[i] === 0x2d) i++
    if (!(b[i] >= 0x30 && b[i] <= 0x39)) fail('bad number')
    while (b[i] >= 0x30 && b[i] <= 0x39) i++
  }
  // Without an exponent only more than 308 digits can overflow a double.
  if (exponent || i - start > 308) {
    const text = Buffer.from(b.buffer, b.byteOffset + start, i - start).toString('latin1')
    if (!Number.isFinite(Number(text)))
      throw new JsonSyntaxError(
        `the JSON number ${text.length > 40 ? text.slice(0, 40) + '...' : text} at byte ${start} is not finite: numbers must fit a double`,
      )
  }
  return i
}

function literal(b: Uint8Array, i: number, word: string, fail: (what: string) => never): number {
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word.charCodeAt(k)) fail('unexpected token')
  return i + word.length
}

function describe(c: number | undefined): string {
  return c === undefined ? 'end' : c >= 0x20 && c < 0x7f ? `"${String.fromCharCode(c)}"` : `byte 0x${c.toString(16)}`
}
