import { useEffect, useRef, useState } from 'preact/hooks'
import { useSession } from './session.js'
import { readEventStream } from './sse.js'

/** One line of a log stream's `data` (worker and pod logs share the format). */
interface LogLine {
  ts: string
  source: 'container' | 'system'
  line: string
}

/**
 * Follows a log route (server-sent events) with fetch, the key in the Authorization header: EventSource
 * cannot send one. A dropped connection is resumed with Last-Event-ID; the server ends the stream when
 * the worker or pod exits.
 */
export function LogStream({
  title,
  path,
  endMessage,
  onClose,
}: {
  title: string
  path: string
  endMessage: string
  onClose: () => void
}) {
  const { client } = useSession()
  const [lines, setLines] = useState<LogLine[]>([])
  const [state, setState] = useState<'live' | 'ended' | string>('live')
  const box = useRef<HTMLPreElement>(null)
  useEffect(() => {
    setLines([])
    setState('live')
    const ac = new AbortController()
    let last: string | undefined
    const follow = async () => {
      for (let attempt = 0; !ac.signal.aborted && attempt < 5; attempt++) {
        try {
          await readEventStream(
            path,
            client.headers(),
            (e) => {
              last = e.id ?? last
              setLines((ls) => [...ls.slice(-1999), JSON.parse(e.data) as LogLine])
            },
            ac.signal,
            last,
          )
          setState('ended')
          return
        } catch (err) {
          if (ac.signal.aborted) return
          setState((err as Error).message)
          await new Promise((r) => setTimeout(r, 1000 * (attempt + 1)))
        }
      }
    }
    void follow()
    return () => ac.abort()
  }, [path])
  useEffect(() => {
    const el = box.current
    if (el) el.scrollTop = el.scrollHeight
  }, [lines])
  return (
    <section class="logs" aria-label={`Logs of ${title}`}>
      <header class="page-head">
        <h2>
          Logs of <span class="mono">{title}</span>{' '}
          <span class={`muted live-${state === 'live' ? 'on' : 'off'}`}>
            {state === 'live' ? '● live' : state === 'ended' ? endMessage : state}
          </span>
        </h2>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </header>
      <pre class="log" ref={box}>
        {lines.map((l, i) => (
          <div key={i} class={`log-${l.source}`}>
            <span class="muted">{l.ts.slice(11, 23)}</span> {l.line}
          </div>
        ))}
        {lines.length === 0 && <span class="muted">No lines yet.</span>}
      </pre>
    </section>
  )
}
