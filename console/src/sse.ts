/** One server-sent event. */
export interface ServerEvent {
  id?: string
  event?: string
  data: string
}

/**
 * Reads a text/event-stream with fetch, so the API key travels in the Authorization header: EventSource
 * cannot send headers, and a key in the URL would end up in logs and history. Resolves when the server
 * ends the stream; rejects on HTTP errors and, with the signal's reason, once it is aborted (no event is
 * handed on after that). `lastEventId` resumes after that event.
 */
export async function readEventStream(
  url: string,
  headers: Record<string, string>,
  onEvent: (e: ServerEvent) => void,
  signal: AbortSignal,
  lastEventId?: string,
): Promise<void> {
  const res = await fetch(url, {
    headers: { ...headers, accept: 'text/event-stream', ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    signal,
  })
  if (!res.ok || !res.body) {
    let detail = `HTTP ${res.status}`
    try {
      detail = (await res.json()).detail ?? detail
    } catch {
      // not a problem body
    }
    throw new Error(detail)
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  let buf = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buf += value
    let sep: number
    while ((sep = buf.search(/\r?\n\r?\n/)) >= 0) {
      const block = buf.slice(0, sep)
      buf = buf.slice(sep).replace(/^\r?\n\r?\n/, '')
      const e = parseBlock(block)
      // A handler that aborts gets no more events, even those already read in the same chunk.
      if (signal.aborted) throw signal.reason
      if (e) onEvent(e)
    }
  }
}

function parseBlock(block: string): ServerEvent | undefined {
  const data: string[] = []
  const e: Partial<ServerEvent> = {}
  for (const line of block.split(/\r?\n/)) {
    if (line === '' || line.startsWith(':')) continue
    const i = line.indexOf(':')
    const field = i < 0 ? line : line.slice(0, i)
    const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '')
    if (field === 'data') data.push(value)
    else if (field === 'id') e.id = value
    else if (field === 'event') e.event = value
  }
  return data.length ? { ...e, data: data.join('\n') } : undefined
}
