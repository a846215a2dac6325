import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody, jobCall, waitStatus } from './helpers/endpoints.js'
import { rawRequest } from './helpers/raw.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const FORM = 'application/x-www-form-urlencoded'

/**
 * Replays, byte for byte where it matters, what the Python `runpod` SDK sends: the key bare in
 * Authorization, `&`-appended parameters on URLs that already have `?`, `$ID` replaced by the job id,
 * job-done bodies as JSON text labelled form-urlencoded, generator chunks then isStream=true.
 */
describe('worker protocol (Python SDK replay)', () => {
  let s: TestServer
  let dir: string
  let ep: string
  let env: Record<string, string>
  let cwd: string
  let volumeId: string

  const call = (method: string, url: string, body?: string, headers: Record<string, string> = {}) =>
    fetch(url, {
      method,
      headers: {
        authorization: env.RUNPOD_AI_API_KEY,
        'content-type': FORM,
        'user-agent': 'RunPod-Python-SDK/1.7.0',
        ...headers,
      },
      body,
    })
  const take = () => call('GET', `${env.RUNPOD_WEBHOOK_GET_JOB}&job_in_progress=0`)
  const done = (jobId: string, body: unknown, isStream = false) =>
    call(
      'POST',
      `${env.RUNPOD_WEBHOOK_POST_OUTPUT.replace('$ID', jobId)}&isStream=${isStream}`,
      typeof body === 'string' ? body : JSON.stringify(body),
      { 'x-request-id': jobId },
    )
  const doneBatch = (body: unknown, key = env.RUNPOD_AI_API_KEY) =>
    fetch(env.HANGAR_WEBHOOK_POST_OUTPUT_BATCH, {
      method: 'POST',
      headers: { authorization: key, 'content-type': FORM },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  const takeBatch = async (n: number) => {
    const r = await call(
      'GET',
      `${env.RUNPOD_WEBHOOK_GET_JOB.replace('/job-take/', '/job-take-batch/')}&batch_size=${n}&job_in_progress=0`,
    )
    expect(r.status).toBe(200)
    return ((await r.json()) as Array<{ id: string }>).map((j) => j.id)
  }
  const statusOf = async (id: string) => (await jobCall(s, 'GET', `/v2/${ep}/status/${id}`)).body
  const submit = async (input: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    (await jobCall(s, 'POST', `/v2/${ep}/run`, { input, ...extra })).body.id as string
  const takeJob = async () => {
    const r = await take()
    expect(r.status).toBe(200)
    return (await r.json()) as Record<string, any>
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-replay-'))
    const dump = join(dir, 'env.json')
    s = await startTestServer({
      jobs: { takeWaitMs: 1_000, pingIntervalMs: 60_000 },
      // The replay worker writes its environment to a file outside its own disk: no process sandbox for it.
      runtime: { process: { sandbox: 'off' } },
      images: {
        'test/replay:latest': {
          command: [process.execPath, join(import.meta.dirname, 'fixtures', 'envdump.mjs')],
          env: { DUMP_TO: dump },
        },
      },
    })
    const volume = await s.api('POST', '/v2/network-volumes', { name: 'models', size: 10, dataCenter: 'LOCAL-1' })
    expect(volume.status).toBe(201)
    volumeId = volume.body.id
    ep = (
      await createEndpoint(
        s,
        endpointBody('test/replay:latest', {
          workers: { min: 1, max: 1, idleTimeout: 3600 },
          networkVolumes: [volumeId],
        }),
      )
    ).id
    const until = Date.now() + 15_000
    while (!existsSync(dump) && Date.now() < until) await new Promise((r) => setTimeout(r, 50))
    ;({ env, cwd } = JSON.parse(readFileSync(dump, 'utf8')))
  })
  afterAll(async () => {
    await s.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('starts the worker with the protocol environment', () => {
    const wid = env.RUNPOD_POD_ID
    const base = `${s.url}/v2/${ep}`
    expect(env.RUNPOD_WEBHOOK_GET_JOB).toBe(`${base}/job-take/${wid}?gpu=CPU`)
    expect(env.RUNPOD_WEBHOOK_POST_OUTPUT).toBe(`${base}/job-done/${wid}/$ID?gpu=CPU`)
    expect(env.RUNPOD_WEBHOOK_POST_STREAM).toBe(`${base}/job-stream/${wid}/$ID?gpu=CPU`)
    expect(env.RUNPOD_WEBHOOK_PING).toBe(`${base}/ping/${wid}?gpu=CPU`)
    expect(env.HANGAR_WEBHOOK_POST_OUTPUT_BATCH).toBe(`${base}/job-done-batch/${wid}?gpu=CPU`)
    expect(env).toMatchObject({
      RUNPOD_ENDPOINT_ID: ep,
      RUNPOD_PING_INTERVAL: '60000',
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
      CUDA_VISIBLE_DEVICES: '',
      DUMP_TO: expect.any(String),
    })
    expect(env.RUNPOD_AI_API_KEY).toMatch(/^hw_/)
    expect(env.RUNPOD_AI_API_KEY).not.toBe(s.adminKey)
    expect(cwd).toBe(join(s.dataDir, 'workers', wid, 'disk'))
    expect(env.HANGAR_VOLUME_PATH).toBe(join(s.dataDir, 'volumes', 'LOCAL-1', volumeId))
    expect(existsSync(env.HANGAR_VOLUME_PATH)).toBe(true)
  })

  // The Python SDK reads a job-take or job-stop answer only when it says `Content-Type: application/json`
  // (aiohttp's content_type, parameters stripped); anything else is dropped at debug level and the job never
  // runs. Every answer with a body, on every route a worker or a job client calls, says so.
  it('labels every answer of the worker protocol and of the job operations application/json', async () => {
    const json = (r: { status: number; headers: Headers }, what: string) => {
      expect.soft(r.headers.get('content-type')?.split(';')[0], `${what} (${r.status})`).toBe('application/json')
    }
    const id = await submit({ prompt: 'ct' }, { webhook: 'http://127.0.0.1:9/hook' })
    const taken = await take()
    expect(taken.status).toBe(200)
    json(taken, 'job-take')
    expect(((await taken.json()) as { id: string }).id).toBe(id)
    const progress = await done(id, { status: 'IN_PROGRESS', output: { percent: 10 } })
    json(progress, 'job-done (progress)')
    json(await jobCall(s, 'GET', `/v2/${ep}/status/${id}`), 'status (running, progress as RawJson)')
    json(
      await call('POST', env.RUNPOD_WEBHOOK_POST_STREAM.replace('$ID', id), JSON.stringify({ output: 'c1' })),
      'job-stream',
    )
    json(await jobCall(s, 'GET', `/v2/${ep}/stream/${id}`), 'stream')
    json(await call('GET', `${env.RUNPOD_WEBHOOK_PING}&job_id=${id}&runpod_version=1.12.0`), 'ping')
    json(await jobCall(s, 'POST', `/v2/${ep}/cancel/${id}`), 'cancel')
    const stop = await call('GET', env.RUNPOD_WEBHOOK_GET_JOB.replace('/job-take/', '/job-stop/'))
    expect(stop.status).toBe(200)
    json(stop, 'job-stop')
    // A result that arrives late is still answered as JSON.
    json(await done(id, { output: { late: true } }), 'job-done (late)')
    // Batches, and a completed job whose output is kept as the text it came in (RawJson).
    const [a, b] = [await submit({ i: 1 }), await submit({ i: 2 })]
    const batch = await call(
      'GET',
      `${env.RUNPOD_WEBHOOK_GET_JOB.replace('/job-take/', '/job-take-batch/')}&batch_size=2&job_in_progress=0`,
    )
    expect(batch.status).toBe(200)
    json(batch, 'job-take-batch')
    expect(((await batch.json()) as Array<{ id: string }>).map((j) => j.id).sort()).toEqual([a, b].sort())
    json(
      await doneBatch([
        { id: a, output: { n: 1 } },
        { id: b, output: { n: 2 } },
      ]),
      'job-done-batch',
    )
    json(await jobCall(s, 'GET', `/v2/${ep}/status/${a}`), 'status (completed, RawJson output)')
    json(await jobCall(s, 'GET', `/v2/${ep}/status-sync/${a}`), 'status-sync')
    json(await jobCall(s, 'GET', `/v2/${ep}/stream/${a}`), 'stream (completed)')
    const failed = await submit({})
    expect((await takeJob()).id).toBe(failed)
    json(await done(failed, { error: 'no' }), 'job-done (error)')
    json(await jobCall(s, 'POST', `/v2/${ep}/retry/${failed}`), 'retry')
    json(await jobCall(s, 'GET', `/v2/${ep}/health`), 'health')
    json(await jobCall(s, 'GET', `/v2/${ep}/requests`), 'requests')
    json(await jobCall(s, 'POST', `/v2/${ep}/purge-queue`), 'purge-queue')
    // /runsync and /run, answered before and after a worker (here: this test) finishes the job.
    const run = jobCall(s, 'POST', `/v2/${ep}/runsync?wait=5000`, { input: { sync: 1 } })
    const syncJob = await takeJob()
    json(await done(syncJob.id, { output: { sync: 'done' } }), 'job-done')
    const sync = await run
    expect(sync.body).toMatchObject({ status: 'COMPLETED', output: { sync: 'done' } })
    json(sync, 'runsync (completed, RawJson output)')
    json(await jobCall(s, 'POST', `/v2/${ep}/run`, { input: {} }), 'run')
    json(await jobCall(s, 'POST', `/v2/${ep}/purge-queue`), 'purge-queue')
    // Errors are problems, also a JSON type.
    const bad = await call('GET', `${env.RUNPOD_WEBHOOK_GET_JOB}&job_in_progress=0`, undefined, {
      authorization: 'hw_wrong',
    })
    expect(bad.status).toBe(401)
    expect(bad.headers.get('content-type')?.split(';')[0]).toBe('application/problem+json')
  })

  it('sends a stop again to a worker whose pings go on listing a job it was told to stop', async () => {
    const id = await submit({ stop: 'me' })
    expect((await takeJob()).id).toBe(id)
    expect((await jobCall(s, 'POST', `/v2/${ep}/cancel/${id}`)).body).toEqual({ id, status: 'CANCELLED' })
    const stopUrl = env.RUNPOD_WEBHOOK_GET_JOB.replace('/job-take/', '/job-stop/')
    // The worker reads the stop but drops it (the Python SDK does when the job's task has not started yet).
    expect(await (await call('GET', stopUrl)).json()).toEqual({ jobsToStop: [id] })
    const ping = () => call('GET', `${env.RUNPOD_WEBHOOK_PING}&job_id=${id}&runpod_version=1.12.0`)
    expect((await ping()).status).toBe(200)
    // One ping listing it could have raced the stop: nothing yet.
    expect((await call('GET', stopUrl)).status).toBe(204)
    expect((await ping()).status).toBe(200)
    expect(await (await call('GET', stopUrl)).json()).toEqual({ jobsToStop: [id] })
    // Once the worker stops listing it, no more stops.
    expect((await call('GET', `${env.RUNPOD_WEBHOOK_PING}&runpod_version=1.12.0`)).status).toBe(200)
    expect((await ping()).status).toBe(200)
    expect((await call('GET', stopUrl)).status).toBe(204)
  })

  it('refuses a wrong worker key, another worker id and an account key', async () => {
    const wrong = await fetch(`${env.RUNPOD_WEBHOOK_GET_JOB}&job_in_progress=0`, {
      headers: { authorization: 'hw_wrong' },
    })
    expect(wrong.status).toBe(401)
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer realm="hangar"')
    const other = await fetch(env.RUNPOD_WEBHOOK_GET_JOB.replace(env.RUNPOD_POD_ID, 'someoneelse'), {
      headers: { authorization: env.RUNPOD_AI_API_KEY },
    })
    expect(other.status).toBe(401)
    const admin = await fetch(`${env.RUNPOD_WEBHOOK_GET_JOB}&job_in_progress=0`, {
      headers: { authorization: s.adminKey },
    })
    expect(admin.status).toBe(401)
  })

  it('answers 204 to job-take when there is no job, after holding the request', async () => {
    const started = Date.now()
    const r = await take()
    expect(r.status).toBe(204)
    expect(Date.now() - started).toBeGreaterThanOrEqual(900)
  })

  it('hands out a job with webhook, policy and s3Config; a progress update keeps it running; the form-labelled result completes it', async () => {
    const s3Config = { accessId: 'a', accessSecret: 'b', bucketName: 'c', endpointUrl: 'http://127.0.0.1:9' }
    const id = await submit(
      { prompt: 'hi' },
      { webhook: 'http://127.0.0.1:9/hook', policy: { executionTimeout: 60_000, ttl: 600_000 }, s3Config },
    )
    const job = await takeJob()
    expect(job).toEqual({
      id,
      input: { prompt: 'hi' },
      webhook: 'http://127.0.0.1:9/hook',
      policy: { executionTimeout: 60_000, ttl: 600_000 },
      s3Config,
    })
    expect((await done(id, { status: 'IN_PROGRESS', output: { percent: 50 } })).status).toBe(200)
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${id}`)).body).toMatchObject({
      status: 'IN_PROGRESS',
      output: { percent: 50 },
    })
    const ping = await call('GET', `${env.RUNPOD_WEBHOOK_PING}&job_id=${id}&runpod_version=1.7.0`)
    expect(ping.status).toBe(200)
    expect((await done(id, { output: { text: 'héllo' } })).status).toBe(200)
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${id}`)).body).toMatchObject({
      status: 'COMPLETED',
      output: { text: 'héllo' },
    })
  })

  it('streams generator chunks, then completes with isStream=true and the aggregate', async () => {
    const id = await submit({ n: 2 })
    await takeJob()
    for (const chunk of ['first', { second: 2 }]) {
      const r = await call(
        'POST',
        env.RUNPOD_WEBHOOK_POST_STREAM.replace('$ID', id),
        JSON.stringify({ output: chunk }),
        { 'content-type': 'application/json' },
      )
      expect(r.status).toBe(200)
    }
    expect((await jobCall(s, 'GET', `/v2/${ep}/stream/${id}`)).body).toEqual({
      id,
      status: 'IN_PROGRESS',
      stream: [{ output: 'first' }, { output: { second: 2 } }],
    })
    expect((await done(id, { output: ['first', { second: 2 }] }, true)).status).toBe(200)
    expect((await jobCall(s, 'GET', `/v2/${ep}/stream/${id}`)).body).toEqual({ id, status: 'COMPLETED', stream: [] })
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${id}`)).body.output).toEqual(['first', { second: 2 }])
  })

  it('fails a job on a raised error and on a returned dict with error', async () => {
    const raised = await submit({})
    await takeJob()
    const error = JSON.stringify({
      error_type: "<class 'ValueError'>",
      error_message: 'bad input',
      error_traceback: 'Traceback ...',
      hostname: 'h',
      worker_id: env.RUNPOD_POD_ID,
      runpod_version: '1.7.0',
    })
    await done(raised, { error })
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${raised}`)).body).toMatchObject({ status: 'FAILED', error })
    const returned = await submit({})
    await takeJob()
    await done(returned, { output: { partial: 1 }, error: 'handler said no' })
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${returned}`)).body).toMatchObject({
      status: 'FAILED',
      error: 'handler said no',
      output: { partial: 1 },
    })
  })

  it('never completes a job with a result it cannot read', async () => {
    const id = await submit({})
    await takeJob()
    const r = await done(id, 'output=not+json')
    expect(r.status).toBe(400)
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${id}`)).body).toMatchObject({
      status: 'FAILED',
      error: expect.stringMatching(/result was refused: it is not valid JSON/),
    })
  })

  it('hands out batches on job-take-batch', async () => {
    const a = await submit({ i: 1 })
    const b = await submit({ i: 2 })
    const r = await call(
      'GET',
      `${env.RUNPOD_WEBHOOK_GET_JOB.replace('/job-take/', '/job-take-batch/')}&batch_size=5&job_in_progress=0`,
    )
    expect(r.status).toBe(200)
    expect(((await r.json()) as Array<{ id: string }>).map((j) => j.id)).toEqual([a, b])
    await done(a, { output: 1 })
    await done(b, { output: 2 })
  })

  it('tells the worker to stop a cancelled job on job-stop, and ignores its late result', async () => {
    const id = await submit({})
    await takeJob()
    expect((await jobCall(s, 'POST', `/v2/${ep}/cancel/${id}`)).body.status).toBe('CANCELLED')
    const stop = await call('GET', env.RUNPOD_WEBHOOK_GET_JOB.replace('/job-take/', '/job-stop/'))
    expect(stop.status).toBe(200)
    expect(await stop.json()).toEqual({ jobsToStop: [id] })
    const late = await done(id, { output: 'too late' })
    expect(late.status).toBe(200)
    expect(await late.json()).toEqual({ accepted: false, status: 'CANCELLED' })
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${id}`)).body.status).toBe('CANCELLED')
  })

  it('applies each item of a job-done-batch as job-done would, and answers for each in order', async () => {
    const [done1, failed, progressing, stream, cancelled] = [
      await submit({ i: 1 }),
      await submit({ i: 2 }),
      await submit({ i: 3 }),
      await submit({ i: 4 }),
      await submit({ i: 5 }),
    ]
    expect(await takeBatch(5)).toEqual([done1, failed, progressing, stream, cancelled])
    expect((await jobCall(s, 'POST', `/v2/${ep}/cancel/${cancelled}`)).body.status).toBe('CANCELLED')
    // As the SDK writes it: JSON text labelled form-urlencoded; the output keeps its digits (kept as raw text).
    const r = await doneBatch(
      `[{"id":"${done1}","output":{"big":12345678901234567890}},` +
        `{"id":"${failed}","output":{"partial":1},"error":"handler said no"},` +
        `{"id":"${progressing}","status":"IN_PROGRESS","output":{"percent":10}},` +
        `{"id":"${stream}","output":["a","b"],"isStream":true},` +
        `{"id":"${cancelled}","output":"too late"},` +
        `{"id":"no-such-job","output":1}]`,
    )
    expect(r.status).toBe(200)
    expect(await r.json()).toEqual({
      results: [
        { id: done1, accepted: true, status: 'COMPLETED' },
        { id: failed, accepted: true, status: 'FAILED' },
        { id: progressing, accepted: true, status: 'IN_PROGRESS' },
        { id: stream, accepted: true, status: 'COMPLETED' },
        { id: cancelled, accepted: false, status: 'CANCELLED' },
        { id: 'no-such-job', accepted: false },
      ],
    })
    const raw = await fetch(`${s.url}/v2/${ep}/status/${done1}`, { headers: { authorization: `Bearer ${s.adminKey}` } })
    expect(await raw.text()).toContain('"output":{"big":12345678901234567890}')
    expect(await statusOf(failed)).toMatchObject({ status: 'FAILED', error: 'handler said no', output: { partial: 1 } })
    expect(await statusOf(progressing)).toMatchObject({ status: 'IN_PROGRESS', output: { percent: 10 } })
    expect(await statusOf(stream)).toMatchObject({ status: 'COMPLETED', output: ['a', 'b'] })
    expect(await statusOf(cancelled)).toMatchObject({ status: 'CANCELLED' })
    // A later result for the job whose progress was posted completes it; [] is a batch of nothing.
    expect(await (await doneBatch([{ id: progressing, output: 'end' }])).json()).toEqual({
      results: [{ id: progressing, accepted: true, status: 'COMPLETED' }],
    })
    expect(await (await doneBatch([])).json()).toEqual({ results: [] })
    expect(await statusOf(progressing)).toMatchObject({ status: 'COMPLETED', output: 'end' })
  })

  it('refuses a malformed job-done-batch with a 400 naming the item at fault, and applies none of it', async () => {
    const [a, b] = [await submit({}), await submit({})]
    expect(await takeBatch(2)).toEqual([a, b])
    const first = { id: a, output: 'must not be applied' }
    const cases: Array<[unknown, RegExp]> = [
      [
        '[{"id":"' + a + '","output":1},',
        /^job-done-batch body: it is not valid JSON \(malformed JSON body: unexpected end at byte \d+\)$/,
      ],
      ['', /^job-done-batch body: it is not valid JSON \(empty body\)$/],
      [
        first,
        /^job-done-batch body: it must be a JSON array of job-done bodies, each with its job's "id", not an object$/,
      ],
      [
        [first, 'x'],
        /^job-done-batch body\[1\]: it must be a JSON object \(a job-done body with "id"\), not a string$/,
      ],
      [[first, [{ id: b }]], /^job-done-batch body\[1\]: it must be a JSON object .*not an array$/],
      [[first, { output: 1 }], /^job-done-batch body\[1\]\.id: missing: each result names its job with "id"$/],
      [
        [first, { id: 7, output: 1 }],
        /^job-done-batch body\[1\]\.id: it must be the job id, a non-empty string, not a number$/,
      ],
      [[first, { id: '', output: 1 }], /^job-done-batch body\[1\]\.id: .*not an empty one$/],
      [
        [first, { id: b, output: 1 }, { id: a, output: 2 }],
        new RegExp(`^job-done-batch body\\[2\\]\\.id: job "${a}" is already at \\[0\\]: post each job once$`),
      ],
      [
        [first, { id: b, isStream: 'true' }],
        /^job-done-batch body\[1\]\.isStream: it must be true or false, not a string$/,
      ],
      [
        [first, ...Array.from({ length: 256 }, (_, k) => ({ id: `other-${k}`, output: k }))],
        /^job-done-batch body: it holds 257 results, at most 256 are taken in one request$/,
      ],
    ]
    for (const [body, detail] of cases) {
      const r = await doneBatch(body)
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400)
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/)
      expect(((await r.json()) as { detail: string }).detail).toMatch(detail)
    }
    // Nothing was applied, and no job was failed for a body that could not be read.
    expect(await statusOf(a)).toMatchObject({ status: 'IN_PROGRESS' })
    expect(await statusOf(b)).toMatchObject({ status: 'IN_PROGRESS' })
    // 256 is the limit itself.
    const full = await doneBatch([
      { id: a, output: 'a' },
      { id: b, stopPod: false, output: 'b' },
      ...Array.from({ length: 254 }, (_, k) => ({ id: `other-${k}`, output: k })),
    ])
    expect(full.status).toBe(200)
    const { results } = (await full.json()) as { results: Array<{ id: string; accepted: boolean }> }
    expect(results).toHaveLength(256)
    expect(results.slice(0, 3)).toEqual([
      { id: a, accepted: true, status: 'COMPLETED' },
      { id: b, accepted: true, status: 'COMPLETED' },
      { id: 'other-0', accepted: false },
    ])
    expect(await statusOf(a)).toMatchObject({ status: 'COMPLETED', output: 'a' })
  })

  it('takes job-done-batch only from the worker itself, and bounds its body like job-done', async () => {
    const id = await submit({})
    await takeJob()
    expect((await doneBatch([{ id, output: 'forged' }], 'hw_wrong')).status).toBe(401)
    expect((await doneBatch([{ id, output: 'forged' }], s.adminKey)).status).toBe(401)
    const other = await fetch(env.HANGAR_WEBHOOK_POST_OUTPUT_BATCH.replace(env.RUNPOD_POD_ID, 'someoneelse'), {
      method: 'POST',
      headers: { authorization: env.RUNPOD_AI_API_KEY },
      body: JSON.stringify([{ id, output: 'forged' }]),
    })
    expect(other.status).toBe(401)
    const u = new URL(env.HANGAR_WEBHOOK_POST_OUTPUT_BATCH)
    const huge = await rawRequest(
      s.url,
      `POST ${u.pathname}${u.search} HTTP/1.1\r\nHost: x\r\nAuthorization: ${env.RUNPOD_AI_API_KEY}\r\nContent-Type: ${FORM}\r\nContent-Length: ${64 * 1024 * 1024 + 1}\r\nConnection: close\r\n\r\n[`,
    )
    expect(huge.status).toBe(413)
    expect(await statusOf(id)).toMatchObject({ status: 'IN_PROGRESS' })
    expect((await (await doneBatch([{ id, output: 'mine' }])).json()).results).toEqual([
      { id, accepted: true, status: 'COMPLETED' },
    ])
  })

  it('replaces the worker after a result with stopPod', async () => {
    const id = await submit({})
    await takeJob()
    const workerId = env.RUNPOD_POD_ID
    await done(id, { output: 'bye', stopPod: true })
    await waitStatus(s, ep, id, 'COMPLETED')
    const until = Date.now() + 15_000
    while ((await s.hangar.store.workers.get(workerId))?.state !== 'EXITED' && Date.now() < until)
      await new Promise((r) => setTimeout(r, 50))
    expect((await s.hangar.store.workers.get(workerId))?.state).toBe('EXITED')
    // workers.min is 1: a new worker replaces it.
    const active = await s.hangar.store.workers.listActive(ep)
    expect(active.map((w) => w.id)).not.toContain(workerId)
  })
})

describe('worker protocol: a job whose take answer was lost', () => {
  let s: TestServer
  let dir: string
  let ep: string
  const clock = new ManualClock()
  afterAll(async () => {
    await s?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('goes back to the queue once two pings of its worker leave it out past the grace, counted and said, and is taken again', async () => {
    dir = mkdtempSync(join(tmpdir(), 'hangar-lost-take-'))
    const dump = join(dir, 'env.json')
    const lines: string[] = []
    s = await startTestServer(
      {
        jobs: { takeWaitMs: 1_000, pingIntervalMs: 60_000 },
        runtime: { process: { sandbox: 'off' } },
        images: {
          'test/replay:latest': {
            command: [process.execPath, join(import.meta.dirname, 'fixtures', 'envdump.mjs')],
            env: { DUMP_TO: dump },
          },
        },
      },
      { clock, logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }) },
    )
    ep = (
      await createEndpoint(s, endpointBody('test/replay:latest', { workers: { min: 1, max: 1, idleTimeout: 3600 } }))
    ).id
    const deadline = Date.now() + 15_000
    while (!existsSync(dump) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    const { env } = JSON.parse(readFileSync(dump, 'utf8')) as { env: Record<string, string> }
    const call = (url: string, init: RequestInit = {}) =>
      fetch(url, { ...init, headers: { authorization: env.RUNPOD_AI_API_KEY, 'content-type': FORM } })
    const ping = async (ids?: string) =>
      expect((await call(`${env.RUNPOD_WEBHOOK_PING}&runpod_version=1.7.0${ids ? `&job_id=${ids}` : ''}`)).status).toBe(
        200,
      )
    const view = async (id: string) =>
      (await jobCall(s, 'GET', `/v2/${ep}/status/${id}`)).body as { status: string; retries?: number; error?: string }
    const statusOf = async (id: string) => (await view(id)).status
    const take = async () =>
      ((await (await call(`${env.RUNPOD_WEBHOOK_GET_JOB}&job_in_progress=0`)).json()) as { id: string }).id
    const waiting = async () =>
      (await s.api('GET', `/v2/serverless/${ep}/workers`)).body.waiting as {
        jobs: number
        reason: { code: string; message: string } | null
      }

    const id = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { n: 1 } })).body.id as string
    // Taken (committed), but as if the answer never reached the worker: it does not list the job.
    expect(await take()).toBe(id)
    await ping()
    await ping()
    expect(await statusOf(id)).toBe('IN_PROGRESS')
    clock.advance(31_000)
    // Listed, it runs on; one ping leaving it out could be a result on its way.
    await ping(`${id},other`)
    await ping()
    expect(await statusOf(id)).toBe('IN_PROGRESS')
    await ping()
    // Back in the queue, counted as a retry, the reason said in the job and in the log.
    const requeued = await view(id)
    expect(requeued).toMatchObject({
      status: 'IN_QUEUE',
      retries: 1,
      error: expect.stringMatching(/^requeued \(1 of 2 allowed\): its worker \S+ never acknowledged it/),
    })
    expect((await s.api('GET', `/v2/${ep}/health`)).body.jobs.retried).toBe(1)
    expect(
      lines
        .map((l) => JSON.parse(l) as { level: number; msg: string; jobId?: string })
        .filter((l) => l.msg === 'job requeued: its worker never acknowledged it' && l.jobId === id && l.level === 30),
    ).toHaveLength(1)
    // One drop is not reported as a broken worker.
    expect((await waiting()).reason?.code).not.toBe('WORKER_DROPS_JOBS')
    // Taken again and completed once; a completed job shows no error.
    expect(await take()).toBe(id)
    const done = await call(`${env.RUNPOD_WEBHOOK_POST_OUTPUT.replace('$ID', id)}&isStream=false`, {
      method: 'POST',
      body: JSON.stringify({ output: 'ok' }),
    })
    expect(await done.json()).toMatchObject({ accepted: true, status: 'COMPLETED' })
    const completed = await view(id)
    expect(completed).toMatchObject({ status: 'COMPLETED', output: 'ok', retries: 1 })
    expect(completed.error).toBeUndefined()
  })

  it('reports a worker that keeps dropping what it takes as WORKER_DROPS_JOBS, and fails a job dropped too often', async () => {
    const { env } = JSON.parse(readFileSync(join(dir, 'env.json'), 'utf8')) as { env: Record<string, string> }
    const call = (url: string) =>
      fetch(url, { headers: { authorization: env.RUNPOD_AI_API_KEY, 'content-type': FORM } })
    const ping = async () => expect((await call(`${env.RUNPOD_WEBHOOK_PING}&runpod_version=1.7.0`)).status).toBe(200)
    const take = async () =>
      ((await (await call(`${env.RUNPOD_WEBHOOK_GET_JOB}&job_in_progress=0`)).json()) as { id: string }).id
    // A worker that throws every take answer away: take, never list, twice past the grace.
    const drop = async () => {
      const id = await take()
      clock.advance(31_000)
      await ping()
      await ping()
      return id
    }
    const a = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { n: 2 } })).body.id as string
    const b = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { n: 3 } })).body.id as string
    // A requeued job keeps its place (oldest first): the worker drops job a again and again.
    expect(await drop()).toBe(a)
    expect((await s.api('GET', `/v2/serverless/${ep}/workers`)).body.waiting.reason?.code).not.toBe('WORKER_DROPS_JOBS')
    expect(await drop()).toBe(a)
    // With the first test's drop, three within the window: the workers view and the waiting jobs say why.
    const w = (await s.api('GET', `/v2/serverless/${ep}/workers`)).body.waiting
    expect(w.reason).toMatchObject({
      code: 'WORKER_DROPS_JOBS',
      message: expect.stringMatching(/^3 job\(s\) in the last 15 min were taken by worker \S+ and never acknowledged/),
    })
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${b}`)).body).toMatchObject({
      status: 'IN_QUEUE',
      waitingReason: expect.stringMatching(/never acknowledged/),
    })
    // A third drop of job a fails it with the reason instead of looping; b is next.
    expect(await drop()).toBe(a)
    expect((await jobCall(s, 'GET', `/v2/${ep}/status/${a}`)).body).toMatchObject({
      status: 'FAILED',
      retries: 3,
      error: expect.stringMatching(/lost its worker 3 times; last: its worker \S+ never acknowledged it/),
    })
    expect(await take()).toBe(b)
  })
})
