import { jsonValue } from '../src/domain/RawJson.js'
import OpenAI, { NotFoundError } from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { ManualClock } from './helpers/clock.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('OpenAI-compatible route of queue endpoints, with the real openai client', () => {
  let s: TestServer
  let ep: string
  let client: OpenAI
  beforeAll(async () => {
    s = await startTestServer({ jobs: { pingIntervalMs: 500 } })
    ep = (
      await createEndpoint(
        s,
        endpointBody('hangar/openai:latest', { name: 'llm', workers: { min: 0, max: 1, idleTimeout: 60 } }),
      )
    ).id
    client = new OpenAI({ apiKey: s.adminKey, baseURL: `${s.url}/v2/${ep}/openai/v1`, maxRetries: 0, timeout: 60_000 })
  })
  afterAll(() => s.stop())

  it('lists the models the worker serves', async () => {
    const models = await client.models.list()
    expect(models.data.map((m) => m.id)).toEqual(['hangar-echo'])
  })

  it('answers a chat completion with the JSON the worker returned', async () => {
    const r = await client.chat.completions.create({
      model: 'hangar-echo',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello there world' },
      ],
    })
    expect(r.object).toBe('chat.completion')
    expect(r.choices[0].message).toMatchObject({ role: 'assistant', content: 'hello there world' })
    expect(r.usage?.completion_tokens).toBe(3)
  })

  it('streams a chat completion as server-sent events while the job still runs', async () => {
    const words = ['one', 'two', 'three', 'four', 'five']
    const stream = await client.chat.completions.create({
      model: 'hangar-echo',
      stream: true,
      messages: [{ role: 'user', content: words.join(' ') }],
      x_delay_ms: 300,
    } as OpenAI.ChatCompletionCreateParamsStreaming)
    let text = ''
    let statusAtFirstWord: string | undefined
    let finish: string | null = null
    for await (const chunk of stream) {
      const delta = chunk.choices[0].delta.content ?? ''
      if (delta && statusAtFirstWord === undefined) {
        // The first word arrived: the job that produces the rest must still be running (nothing buffered).
        const recent = await jobCall(s, 'GET', `/v2/${ep}/requests?limit=1`)
        statusAtFirstWord = recent.body.requests[0].status
      }
      text += delta
      finish = chunk.choices[0].finish_reason ?? finish
    }
    expect(text).toBe(words.join(' '))
    expect(finish).toBe('stop')
    expect(statusAtFirstWord).toBe('IN_PROGRESS')
  })

  it("gives the worker's OpenAI error with its status, so the client raises the matching error", async () => {
    await expect(
      client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    ).rejects.toBeInstanceOf(NotFoundError)
  })

  it('puts the route and body into the job input the way worker-vllm reads them', async () => {
    await client.completions.create({ model: 'hangar-echo', prompt: 'a b' })
    const recent = await jobCall(s, 'GET', `/v2/${ep}/requests?limit=1`)
    const job = await s.hangar.store.jobs.get(recent.body.requests[0].id, { input: true })
    expect(jsonValue(job?.input)).toEqual({
      openai_route: '/v1/completions',
      openai_input: { model: 'hangar-echo', prompt: 'a b' },
    })
  })

  it('refuses a request without a key, or with a key restricted to another endpoint', async () => {
    const anon = await fetch(`${s.url}/v2/${ep}/openai/v1/models`)
    expect(anon.status).toBe(401)
    const other = (
      await createEndpoint(s, endpointBody('hangar/openai:latest', { name: 'other' }), await s.accountKey('restricted'))
    ).id
    const key = await s.accountKey('restricted', 'RESTRICTED', [other])
    const r = await fetch(`${s.url}/v2/${ep}/openai/v1/models`, { headers: { authorization: `Bearer ${key}` } })
    expect(r.status).toBe(401)
  })
})

describe('GET /v2/{id}/requests', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({ jobs: { pingIntervalMs: 500 } })
  })
  afterAll(() => s.stop())

  it('lists recent requests newest first with status, times and worker', async () => {
    const ep = (await createEndpoint(s, endpointBody('hangar/echo:latest'))).id
    const first = await jobCall(s, 'POST', `/v2/${ep}/runsync`, { input: { n: 1 } })
    const second = await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { n: 2 } })
    const r = await jobCall(s, 'GET', `/v2/${ep}/requests`)
    expect(r.status).toBe(200)
    expect(r.body.requests.map((x: { id: string }) => x.id)).toEqual([second.body.id, first.body.id])
    expect(r.body.requests[1]).toMatchObject({
      id: first.body.id,
      status: 'COMPLETED',
      sync: true,
      workerId: first.body.workerId,
      retries: 0,
    })
    expect(Date.parse(r.body.requests[1].completedAt)).toBeGreaterThanOrEqual(Date.parse(r.body.requests[1].createdAt))
    expect(r.body.requests[1].executionTime).toBeGreaterThanOrEqual(0)
    expect((await jobCall(s, 'GET', `/v2/${ep}/requests?limit=1`)).body.requests).toHaveLength(1)
    expect((await jobCall(s, 'GET', `/v2/${ep}/requests?limit=0`)).status).toBe(400)
  })
})

// The limiter's windows are fixed and aligned to the epoch: on a manual clock set at a window's start, the
// eleventh call cannot fall into the next window however slowly the machine runs.
describe('GET /v2/{id}/requests limits', () => {
  let s: TestServer
  const clock = new ManualClock()
  beforeAll(async () => {
    clock.set(Math.ceil(Date.now() / 10_000) * 10_000 + 60_000)
    s = await startTestServer({}, { clock })
  })
  afterAll(() => s.stop())

  it('allows 10 per 10 seconds on an endpoint without workers, then answers 429 with Retry-After', async () => {
    const ep = (await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'quiet' }))).id
    for (let i = 0; i < 10; i++) expect((await jobCall(s, 'GET', `/v2/${ep}/requests`)).status).toBe(200)
    const over = await jobCall(s, 'GET', `/v2/${ep}/requests`)
    expect(over.status).toBe(429)
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0)
  })
})
