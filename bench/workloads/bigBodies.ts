import { Pool } from 'undici'
import { readFileSync } from 'node:fs'
import {
  accountKey,
  createQueueEndpoint,
  jobServerConfig,
  round,
  rssMb,
  sleep,
  startServer,
  waitReady,
  type BenchContext,
  type Row,
} from '../lib.js'

const MiB = 1024 * 1024

/**
 * Workload 10: peak resident memory of the control plane while clients each send a 19 MiB /runsync body at
 * once. An echo worker (19 MiB also comes back as each result), and a worker answering small outputs (the
 * input alone is in flight), with 8 calls at once and with one; each on a fresh server. The peak is the
 * kernel's high-water mark of the server process (VmHWM), set against its RSS when idle before the load and
 * against the bytes in flight: inputs plus outputs, and inputs alone.
 */
export async function bigBodies(ctx: BenchContext): Promise<Row[]> {
  return [
    ...(await variant(ctx, 'bench/echo:latest', 'echo worker', 8)),
    ...(await variant(ctx, 'bench/noop8:latest', 'small outputs', 8)),
    ...(await variant(ctx, 'bench/noop8:latest', 'small outputs, one call at a time', 1)),
  ]
}

async function variant(ctx: BenchContext, image: string, label: string, clients: number): Promise<Row[]> {
  const size = 19 * MiB
  const rounds = ctx.quick ? 1 : 3
  const echo = image === 'bench/echo:latest'
  // One worker taking all 8 jobs at once (both images run 8 concurrently).
  const s = await startServer(jobServerConfig())
  const w = `10 big bodies, ${label}`
  try {
    const key = await accountKey(s, 'bench', true)
    const ep = await createQueueEndpoint(s, key, image, { workers: { min: 1, max: 1, idleTimeout: 60 } })
    await waitReady(s, key, ep, 1)
    const pid = s.child.pid!
    await sleep(500)
    const idle = rssMb(pid)
    const body = bigBody(size)
    const pool = new Pool(s.url, { connections: clients, bodyTimeout: 600_000, headersTimeout: 600_000 })
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const t0 = performance.now()
    let refused = 0
    let firstRefusal = ''
    try {
      for (let r = 0; r < rounds; r++) {
        await Promise.all(
          Array.from({ length: clients }, async () => {
            const res = await pool.request({ path: `/v2/${ep}/runsync?wait=300000`, method: 'POST', headers, body })
            const text = await res.body.text()
            if (res.statusCode !== 200 || !text.startsWith('{"id"') || !text.includes('"COMPLETED"')) {
              refused++
              firstRefusal ||= `${res.statusCode} ${text.slice(0, 200)}`
            } else if (echo && text.length < size - 100)
              throw new Error(`/runsync returned ${text.length} bytes, expected the ${size}-byte input back`)
          }),
        )
      }
    } finally {
      await pool.close()
    }
    const seconds = (performance.now() - t0) / 1000
    const peak = highWaterMb(pid)
    const inputs = (clients * size) / MiB
    const inFlight = echo ? 2 * inputs : inputs
    const rows: Row[] = [
      { workload: w, metric: 'server RSS idle', value: idle, unit: 'MiB', note: 'after start and one worker ready' },
      {
        workload: w,
        metric: `peak server RSS, ${clients} x ${size / MiB} MiB /runsync`,
        value: peak,
        unit: 'MiB',
        goal: `<= idle + 2 x ${inFlight} MiB`,
        met: peak - idle <= 2 * inFlight,
        note: `${rounds} round(s) of ${clients} concurrent calls, ${label}, ${round(seconds, 1)} s; ${refused} refused${firstRefusal ? ` (${firstRefusal})` : ''}`,
      },
    ]
    if (echo)
      rows.push({
        workload: w,
        metric: 'peak growth per body byte in flight',
        value: round((peak - idle) / inFlight, 2),
        unit: 'x',
        note: `(peak - idle) / (${clients} x ${size / MiB} MiB in + out)`,
      })
    rows.push({
      workload: w,
      metric: 'peak growth per input byte',
      value: round((peak - idle) / inputs, 2),
      unit: 'x',
      note: `(peak - idle) / (${clients} x ${size / MiB} MiB in)`,
    })
    return rows
  } finally {
    await s.stop()
  }
}

/** `{"input":{"data":"..."}}` of exactly `size` bytes: base64-like text, as an image or a file would be sent. */
function bigBody(size: number): Buffer {
  const head = '{"input":{"data":"'
  const tail = '"}}'
  const buf = Buffer.alloc(size, 'A')
  buf.write(head, 0)
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  for (let i = head.length; i < size - tail.length; i += 997) buf[i] = alphabet.charCodeAt(i % 64)
  buf.write(tail, size - tail.length)
  return buf
}

/** Peak resident set size of a process since it started, in MiB (Linux /proc VmHWM). */
function highWaterMb(pid: number): number {
  const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Math.round(Number(m[1]) / 1024) : NaN
}
