import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall, readLogsUntil, waitFinal, waitStatus } from './helpers/endpoints.js'
import { pythonSdkMissing, pythonWorkerImage } from './helpers/python.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const missing = pythonSdkMissing()
if (missing)
  console.warn(`skipping the Python runpod SDK workers: ${missing} (set HANGAR_REQUIRE_PYTHON=1 to fail instead)`)

/**
 * Unmodified Python workers on the `runpod` SDK (release 1.12.0), the kind nearly every worker in the wild
 * is, run by the process runtime against a real Hangar: each test is something users of that SDK rely on.
 * The SDK is strict where Hangar's own SDK is not (a job-take answer must say application/json), so these
 * are the tests that catch a change to the worker protocol's answers. On PostgreSQL too (npm run test:pg).
 */
describe.skipIf(missing !== null)('Python workers on the runpod SDK', () => {
  let s: TestServer
  const ep: Record<'plain' | 'stream' | 'concurrent' | 'openai', string> = {
    plain: '',
    stream: '',
    concurrent: '',
    openai: '',
  }
  const run = async (id: string, input: unknown) => {
    const r = await jobCall(s, 'POST', `/v2/${id}/run`, { input })
    expect(r.status).toBe(200)
    return r.body.id as string
  }

  beforeAll(async () => {
    s = await startTestServer({
      jobs: { pingIntervalMs: 1_000, takeWaitMs: 5_000 },
      images: Object.fromEntries(
        (['plain', 'stream', 'concurrent', 'openai'] as const).map((h) => [`py/${h}:1`, pythonWorkerImage(h)]),
      ),
    })
    for (const h of Object.keys(ep) as Array<keyof typeof ep>) {
      ep[h] = (
        await createEndpoint(
          s,
          endpointBody(`py/${h}:1`, { name: `py-${h}`, workers: { min: 1, max: 1, idleTimeout: 600 } }),
        )
      ).id
    }
  }, 60_000)
  afterAll(() => s?.stop())

  it('runs a plain handler through /runsync', async () => {
    const r = await jobCall(s, 'POST', `/v2/${ep.plain}/runsync?wait=60000`, { input: { prompt: 'hello' } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({
      status: 'COMPLETED',
      output: { echo: { prompt: 'hello' }, worker: expect.any(String) },
    })
    expect(r.body.retries).toBeUndefined()
  })

  it('runs a plain handler through /run and /status', async () => {
    const id = await run(ep.plain, { n: 42 })
    const done = await waitFinal(s, ep.plain, id, 60_000)
    expect(done).toMatchObject({ id, status: 'COMPLETED', output: { echo: { n: 42 } } })
    expect((await jobCall(s, 'GET', `/v2/${ep.plain}/status/${id}`)).body).toMatchObject({
      status: 'COMPLETED',
      executionTime: expect.any(Number),
      delayTime: expect.any(Number),
    })
  })

  it('streams a generator handler with return_aggregate_stream through /stream, and keeps the aggregate', async () => {
    const id = await run(ep.stream, { count: 4 })
    const chunks: unknown[] = []
    for (let status = 'IN_QUEUE'; status !== 'COMPLETED'; ) {
      const r = await jobCall(s, 'GET', `/v2/${ep.stream}/stream/${id}`)
      expect(r.status).toBe(200)
      expect(r.body.status).not.toMatch(/FAILED|CANCELLED|TIMED_OUT/)
      chunks.push(...r.body.stream.map((c: { output: unknown }) => c.output))
      status = r.body.status
    }
    expect(chunks).toEqual(['chunk 1', 'chunk 2', 'chunk 3', 'chunk 4'])
    expect((await jobCall(s, 'GET', `/v2/${ep.stream}/status/${id}`)).body).toMatchObject({
      status: 'COMPLETED',
      output: ['chunk 1', 'chunk 2', 'chunk 3', 'chunk 4'],
    })
  })

  it('runs several jobs at once on one worker with an async handler and concurrency_modifier', async () => {
    const ids = await Promise.all([1, 2, 3, 4].map(() => run(ep.concurrent, { seconds: 3 })))
    const done = await Promise.all(ids.map((id) => waitFinal(s, ep.concurrent, id, 60_000)))
    for (const d of done) expect(d.status).toBe('COMPLETED')
    expect(new Set(done.map((d) => d.output.worker)).size).toBe(1)
    // The handler counts how many of its calls overlapped: several ran at once.
    expect(Math.max(...done.map((d) => d.output.peak as number))).toBeGreaterThanOrEqual(2)
  })

  it('shows progress_update while the job runs', async () => {
    const id = await run(ep.plain, { action: 'progress', hold: 6 })
    const running = await waitUntil(async () => {
      const v = (await jobCall(s, 'GET', `/v2/${ep.plain}/status/${id}`)).body
      return v.status === 'IN_PROGRESS' && v.output?.percent === 50 ? v : undefined
    }, 30_000)
    expect(running).toMatchObject({ status: 'IN_PROGRESS', output: { percent: 50 } })
    expect(await waitFinal(s, ep.plain, id, 60_000)).toMatchObject({ status: 'COMPLETED', output: { done: true } })
  }, 60_000)

  it('fails a job whose handler raises, with the SDK error shape', async () => {
    const id = await run(ep.plain, { action: 'raise', message: 'no such model' })
    const done = await waitFinal(s, ep.plain, id, 60_000)
    expect(done.status).toBe('FAILED')
    const error = JSON.parse(done.error as string) as Record<string, string>
    expect(error).toMatchObject({
      error_type: "<class 'ValueError'>",
      error_message: 'no such model',
      runpod_version: expect.any(String),
    })
    expect(error.error_traceback).toMatch(/Traceback[\s\S]*ValueError: no such model/)
    expect(error.worker_id).toBe(done.workerId)
  })

  it('fails a job whose handler returns {"error": ...}', async () => {
    const id = await run(ep.plain, { action: 'error', message: 'input too long' })
    expect(await waitFinal(s, ep.plain, id, 60_000)).toMatchObject({ status: 'FAILED', error: 'input too long' })
  })

  it('replaces the worker after a job returns refresh_worker', async () => {
    const id = await run(ep.plain, { action: 'refresh' })
    const done = await waitFinal(s, ep.plain, id, 60_000)
    expect(done).toMatchObject({ status: 'COMPLETED', output: { worker: done.workerId } })
    expect(done.output.refresh_worker).toBeUndefined()
    // The next job runs on a fresh worker.
    const next = await waitFinal(s, ep.plain, await run(ep.plain, { after: 'refresh' }), 60_000)
    expect(next.status).toBe('COMPLETED')
    expect(next.output.worker).not.toBe(done.workerId)
  })

  it('stops a job cancelled mid-run in its worker through job-stop; the worker runs on', async () => {
    const id = await run(ep.concurrent, { seconds: 120 })
    const running = await waitStatus(s, ep.concurrent, id, 'IN_PROGRESS', 30_000)
    expect((await jobCall(s, 'POST', `/v2/${ep.concurrent}/cancel/${id}`)).body).toEqual({ id, status: 'CANCELLED' })
    // The SDK long-polls job-stop, cancels the handler's task and says so in its log.
    // The SDK long-polls job-stop and cancels the handler's task. It drops a stop that arrives before it has
    // started the job's task (here the cancel may come that early): the worker's next pings still list the
    // job, and Hangar sends the stop again.
    const lines = await readLogsUntil(
      s,
      ep.concurrent,
      running.workerId,
      new RegExp(`"requestId": "${id}", "message": "Job stopped."`),
      30_000,
    )
    expect(lines.some((l) => l.data.line.includes('Stopping job.') && l.data.line.includes(id))).toBe(true)
    // Same worker, next job.
    const next = await waitFinal(s, ep.concurrent, await run(ep.concurrent, { seconds: 0 }), 60_000)
    expect(next).toMatchObject({ status: 'COMPLETED', output: { worker: running.workerId } })
    expect((await jobCall(s, 'GET', `/v2/${ep.concurrent}/status/${id}`)).body.status).toBe('CANCELLED')
  }, 60_000)

  it('answers OpenAI clients on /openai/v1 from a worker-vllm-style handler', async () => {
    const client = new OpenAI({
      apiKey: s.adminKey,
      baseURL: `${s.url}/v2/${ep.openai}/openai/v1`,
      maxRetries: 0,
      timeout: 60_000,
    })
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['py-echo'])
    const answer = await client.chat.completions.create({
      model: 'py-echo',
      messages: [{ role: 'user', content: 'hello from python' }],
    })
    expect(answer.choices[0].message).toMatchObject({ role: 'assistant', content: 'hello from python' })
    expect(answer.usage?.completion_tokens).toBe(3)
    let text = ''
    let finish: string | null = null
    for await (const chunk of await client.chat.completions.create({
      model: 'py-echo',
      stream: true,
      messages: [{ role: 'user', content: 'one two three four' }],
    })) {
      text += chunk.choices[0].delta.content ?? ''
      finish = chunk.choices[0].finish_reason ?? finish
    }
    expect(text).toBe('one two three four')
    expect(finish).toBe('stop')
  })

  it('passes SSE text that worker-vllm cuts across yields to OpenAI clients byte for byte', async () => {
    // What the client was sent, recorded beside what the client parses from it.
    let sent: Promise<string> | undefined
    const recording = async (url: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
      const res = await fetch(url, init)
      const [mine, theirs] = res.body!.tee()
      sent = new Response(mine).text()
      return new Response(theirs, res)
    }
    const client = new OpenAI({
      apiKey: s.adminKey,
      baseURL: `${s.url}/v2/${ep.openai}/openai/v1`,
      maxRetries: 0,
      timeout: 60_000,
      fetch: recording,
    })
    const chunks: OpenAI.ChatCompletionChunk[] = []
    const params = {
      model: 'py-echo',
      stream: true,
      messages: [{ role: 'user', content: 'one two three' }],
      x_split_events: true,
    } as OpenAI.ChatCompletionCreateParamsStreaming
    for await (const chunk of await client.chat.completions.create(params)) chunks.push(chunk)
    // Every event parsed: the role, one per word, the stop; each naming the model the cut went through.
    expect(chunks.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('one two three')
    expect(chunks.map((c) => c.model)).toEqual(Array(5).fill('py-echo'))
    expect(chunks.at(-1)?.choices[0].finish_reason).toBe('stop')
    // The bytes sent are the worker's yields concatenated: no event added, none wrapped, one [DONE].
    const id = (await jobCall(s, 'GET', `/v2/${ep.openai}/requests?limit=1`)).body.requests[0].id
    const yields = (await waitFinal(s, ep.openai, id, 60_000)).output as string[]
    expect(yields.length).toBeGreaterThan(chunks.length + 1)
    expect(await sent).toBe(yields.join(''))
  })

  it('counts every job of the suite in /health, none retried', async () => {
    // plain: runsync, run, progress, refresh and the job after it completed; raise and error failed.
    expect((await jobCall(s, 'GET', `/v2/${ep.plain}/health`)).body.jobs).toEqual({
      completed: 5,
      failed: 2,
      inProgress: 0,
      inQueue: 0,
      retried: 0,
    })
    expect((await jobCall(s, 'GET', `/v2/${ep.stream}/health`)).body.jobs).toEqual({
      completed: 1,
      failed: 0,
      inProgress: 0,
      inQueue: 0,
      retried: 0,
    })
    // concurrent: four at once and the one after the cancel; the cancelled one is neither.
    expect((await jobCall(s, 'GET', `/v2/${ep.concurrent}/health`)).body.jobs).toEqual({
      completed: 5,
      failed: 0,
      inProgress: 0,
      inQueue: 0,
      retried: 0,
    })
    expect((await jobCall(s, 'GET', `/v2/${ep.openai}/health`)).body.jobs).toMatchObject({
      completed: 4,
      failed: 0,
      inProgress: 0,
      inQueue: 0,
      retried: 0,
    })
  })
})

async function waitUntil<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const v = await probe()
    if (v !== undefined) return v
    if (Date.now() > until) throw new Error(`not reached within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}
