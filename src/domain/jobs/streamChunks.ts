/** The largest stream chunk the spec allows: 1 MB. */
export const MAX_CHUNK_BYTES = 1024 * 1024

/**
 * Splits one streamed output into chunks of at most `maxBytes` of JSON each. A string too large is cut
 * into consecutive strings; any other value too large is sent as its JSON text cut the same way (the
 * pieces concatenated parse back to it). Cuts never split a character.
 */
export function splitChunk(output: unknown, maxBytes = MAX_CHUNK_BYTES): unknown[] {
  const json = JSON.stringify(output ?? null)
  if (Buffer.byteLength(json) <= maxBytes) return [output ?? null]
  const text = typeof output === 'string' ? output : json
  const pieces: string[] = []
  let piece = ''
  let size = 2 // the quotes
  for (const ch of text) {
    const cost = Buffer.byteLength(JSON.stringify(ch)) - 2
    if (size + cost > maxBytes && piece) {
      pieces.push(piece)
      piece = ''
      size = 2
    }
    piece += ch
    size += cost
  }
  if (piece) pieces.push(piece)
  return pieces
}
