import { useEffect, useRef, useState } from 'preact/hooks'
import type { JobRef, JobStatus, JobStatusView, StreamView } from '../../../../src/contract/job.js'
import { useSession } from '../../session.js'
import { Badge, Field, Json, Problems, useAction, inputValue } from '../../ui.js'

// Type-only imports from the contract keep TypeBox out of the bundle, so the final statuses are listed here.
const FINAL: readonly JobStatus[] = ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT']
const isFinal = (s: JobStatus) => FINAL.includes(s)

/**
 * Submits a job with JSON input through /run or /runsync and follows it: the status is read again after
 * each long-poll of /stream (which returns as soon as the worker streams a chunk), so chunks appear live
 * and the final output arrives with the final status.
 */
export function JobTester({ endpointId }: { endpointId: string }) {
  const { client } = useSession()
  const [input, setInput] = useState('{\n  "hello": "world"\n}')
  const [mode, setMode] = useState<'run' | 'runsync'>('run')
  const [job, setJob] = useState<JobStatusView | null>(null)
  const [chunks, setChunks] = useState<unknown[]>([])
  const [parseError, setParseError] = useState<string | null>(null)
  const follow = useRef<AbortController | null>(null)
  useEffect(() => () => follow.current?.abort(), [])

  const watch = async (id: string, signal: AbortSignal) => {
    for (;;) {
      const s = await client.get<JobStatusView>(`/v2/${endpointId}/status/${id}`, signal)
      setJob(s)
      if (isFinal(s.status)) return
      const st = await client.get<StreamView>(`/v2/${endpointId}/stream/${id}?wait=2000`, signal)
      if (st.stream.length) setChunks((c) => [...c, ...st.stream.map((x) => x.output)])
    }
  }

  const submit = useAction(async () => {
    let parsed: unknown
    try {
      parsed = JSON.parse(input)
    } catch (err) {
      setParseError(`input is not valid JSON: ${(err as Error).message}`)
      return
    }
    setParseError(null)
    follow.current?.abort()
    const ac = new AbortController()
    follow.current = ac
    setChunks([])
    if (mode === 'runsync') {
      setJob({ id: '…', status: 'IN_QUEUE' })
      const r = await client.post<JobStatusView>(`/v2/${endpointId}/runsync`, { input: parsed }, ac.signal)
      setJob(r)
      if (!isFinal(r.status)) await watch(r.id, ac.signal)
    } else {
      const ref = await client.post<JobRef>(`/v2/${endpointId}/run`, { input: parsed }, ac.signal)
      setJob({ id: ref.id, status: ref.status })
      await watch(ref.id, ac.signal)
    }
  })
  const cancel = useAction(async () => {
    if (job && !isFinal(job.status)) await client.post(`/v2/${endpointId}/cancel/${job.id}`)
  })

  return (
    <div class="grid">
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault()
          void submit.run()
        }}
      >
        <Field label="Input (JSON)" name="input">
          <textarea name="input" class="mono" rows={8} value={input} onInput={(e) => setInput(inputValue(e))} />
        </Field>
        {parseError && <div class="problem">{parseError}</div>}
        <Problems error={submit.error} />
        <div class="form-actions">
          <select
            name="mode"
            value={mode}
            onChange={(e) => setMode(inputValue<'run' | 'runsync'>(e))}
            aria-label="Mode"
          >
            <option value="run">/run (asynchronous)</option>
            <option value="runsync">/runsync (wait for the result)</option>
          </select>
          <button class="primary" type="submit" disabled={submit.busy}>
            Run
          </button>
          {job && !isFinal(job.status) && job.id !== '…' && (
            <button type="button" onClick={() => void cancel.run()}>
              Cancel
            </button>
          )}
        </div>
      </form>
      <div class="job" aria-live="polite">
        {job && (
          <>
            <p>
              Job <span class="mono">{job.id}</span> <Badge value={job.status} />
            </p>
            {job.waitingReason && <p class="muted">Waiting: {job.waitingReason}</p>}
            {(job.delayTime !== undefined || job.executionTime !== undefined) && (
              <p class="muted">
                {job.delayTime !== undefined && `delay ${job.delayTime} ms`}{' '}
                {job.executionTime !== undefined && `· execution ${job.executionTime} ms`}
              </p>
            )}
            {chunks.length > 0 && (
              <>
                <h2>Stream</h2>
                <div class="stream">
                  {chunks.map((c, i) => (
                    <div key={i} class="mono">
                      {JSON.stringify(c)}
                    </div>
                  ))}
                </div>
              </>
            )}
            {job.output !== undefined && (
              <>
                <h2>Output</h2>
                <div class="output">
                  <Json value={job.output} />
                </div>
              </>
            )}
            {job.error && <div class="problem">{job.error}</div>}
          </>
        )}
      </div>
    </div>
  )
}
