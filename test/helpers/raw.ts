import { connect, type Socket } from 'node:net'

/** An HTTP answer read off a raw socket. */
export interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: string
  /** ms from the first byte sent to the answer's end. */
  ms: number
}

/** Opens a TCP connection to the server of `url`. */
export function openSocket(url: string): Promise<Socket> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname, () => resolve(socket))
    socket.once('error', reject)
  })
}

/**
 * Reads one answer from `socket` until the server closes it or the declared body is complete; resolves
 * null when the socket closes without one. Fails after `timeoutMs`.
 */
export function readAnswer(socket: Socket, timeoutMs = 20_000): Promise<RawAnswer | null> {
  const t0 = Date.now()
  return new Promise((resolve, reject) => {
    let data = Buffer.alloc(0)
    const timer = setTimeout(() => {
      socket.destroy()
      reject(
        new Error(`no answer within ${timeoutMs} ms; got ${JSON.stringify(data.toString('latin1').slice(0, 200))}`),
      )
    }, timeoutMs)
    const finish = (answer: RawAnswer | null) => {
      clearTimeout(timer)
      socket.removeAllListeners('data')
      resolve(answer)
    }
    const parse = (): RawAnswer | null => {
      const text = data.toString('latin1')
      const end = text.indexOf('\r\n\r\n')
      if (end < 0) return null
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n')
      const headers: Record<string, string> = {}
      for (const l of lines) {
        const i = l.indexOf(':')
        headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
      }
      const body = data.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'))
      const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length'])
      if (length !== undefined && body.length < length) return null
      const payload = headers['transfer-encoding'] === 'chunked' ? dechunk(body) : body
      if (payload === null) return null
      return { status: Number(statusLine.split(' ')[1]), headers, body: payload.toString('utf8'), ms: Date.now() - t0 }
    }
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      const answer = parse()
      if (
        answer &&
        (answer.headers['content-length'] !== undefined || answer.headers['transfer-encoding'] === 'chunked')
      )
        finish(answer)
    })
    socket.once('close', () => finish(parse()))
    socket.once('error', () => {})
  })
}

/** The payload of a chunked body, or null until its last chunk has arrived. */
function dechunk(data: Buffer): Buffer | null {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const eol = data.indexOf('\r\n', at)
    if (eol < 0) return null
    const size = Number.parseInt(data.subarray(at, eol).toString('latin1'), 16)
    if (size === 0) return Buffer.concat(parts)
    if (data.length < eol + 2 + size + 2) return null
    parts.push(data.subarray(eol + 2, eol + 2 + size))
    at = eol + 2 + size + 2
  }
}

/** Sends `request` (raw HTTP/1.1 text or bytes) on a new connection and reads the answer. */
export async function rawRequest(url: string, request: string | Buffer, timeoutMs?: number): Promise<RawAnswer> {
  const socket = await openSocket(url)
  const answer = readAnswer(socket, timeoutMs)
  socket.write(request)
  const a = await answer
  socket.destroy()
  if (!a) throw new Error('the server closed the connection without an answer')
  return a
}
