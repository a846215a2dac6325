import type { FastifyReply, FastifyRequest } from 'fastify'
import type { LogQuery } from '../contract/logs.js'
import type { LogLine, WorkerLog } from '../runtime/WorkerLog.js'

const KEEPALIVE_MS = 15_000

/**
 * Streams a log as server-sent events (api-facts §2.5): the history (`Last-Event-ID` beats `since`, which
 * beats `tail`, default 100 lines), then live lines until the log ends or the client goes. Each event is
 * `id: <ts>/<12-digit seq>` and `data: {ts, source, line}`; a Last-Event-ID of either that form or a bare
 * timestamp resumes after that line. Worker logs and pod logs share it.
 */
export function streamLog(req: FastifyRequest, reply: FastifyReply, log: WorkerLog, query: LogQuery): void {
  const { source, tail = 100, since } = query
  const wanted = (l: LogLine) => source === undefined || l.source === source
  const lastId = req.headers['last-event-id']
  const afterSeq = typeof lastId === 'string' ? Number(/(?:\/)(\d+)$/.exec(lastId)?.[1] ?? NaN) : NaN
  const afterTs = !Number.isNaN(afterSeq)
    ? null
    : typeof lastId === 'string' && !Number.isNaN(Date.parse(lastId))
      ? Date.parse(lastId)
      : since
        ? Date.parse(since)
        : null
  let history = log.history().filter(wanted)
  if (!Number.isNaN(afterSeq)) history = history.filter((l) => l.seq > afterSeq)
  else if (afterTs !== null) history = history.filter((l) => l.ts > afterTs)
  else history = tail === 0 ? [] : history.slice(-tail)

  reply.hijack()
  const res = reply.raw
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  })
  const send = (l: LogLine) =>
    res.write(
      `id: ${new Date(l.ts).toISOString()}/${String(l.seq).padStart(12, '0')}\ndata: ${JSON.stringify({ ts: new Date(l.ts).toISOString(), source: l.source, line: l.line })}\n\n`,
    )
  let lastSent = 0
  for (const l of history) {
    send(l)
    lastSent = l.seq
  }
  const stopLive = log.onLine((l) => {
    if (wanted(l) && l.seq > lastSent) send(l)
  })
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS)
  let stopEnd: () => void = () => {}
  const finish = () => {
    stopLive()
    stopEnd()
    clearInterval(keepalive)
    if (!res.writableEnded) res.end()
  }
  res.once('close', finish)
  // onEnd calls finish at once when the log has already ended (the history is all there is).
  stopEnd = log.onEnd(finish)
}
