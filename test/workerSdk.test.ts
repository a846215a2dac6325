import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall, waitFinal, waitStatus } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

const FIXTURE = join(import.meta.dirname, 'fixtures', 'sdk-worker.mjs')

describe('TypeScript worker SDK and worker visibility', () => {
  let s: TestServer
  let ep: string
  /** Worker-protocol result posts the control plane answered: job-done ones, and job-done-batch ones with their item count. */
  const posts = { done: 0, batches: [] as number[] }
  beforeAll(async () => {
    s = await startTestServer(
      {
        jobs: { pingIntervalMs: 500 },
        images: {
          'test/sdk:latest': { command: [process.execPath, FIXTURE] },
          'test/sdk-batch:latest': { command: [process.execPath, FIXTURE], env: { SDK_CONCURRENCY: '8' } },
        },
      },
      {
        configureApp: (app) => {
          app.addHook('preHandler', async (req) => {
            const route = req.routeOptions.url ?? ''
            if (route.endsWith('/job-done/:workerId/:jobId')) posts.done++
            if (route.endsWith('/job-done-batch/:workerId'))
              posts.batches.push((JSON.parse(String(req.body)) as unknown[]).length)
          })
        },
      },
    )
    ep = (await createEndpoint(s, endpointBody('test/sdk:latest', { workers: { min: 0, max: 1, idleTimeout: 60 } }))).id
  })
  afterAll(() => s.stop())

  it('runs two jobs at once on one worker with concurrency 2, showing progress while they run', async () => {
    const a = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { ms: 1_500 } })).body.id
    const b = (await jobCall(s, 'POST', `/v2/${ep}/run`, { input: { ms: 1_500 } })).body.id
    const ra = await waitStatus(s, ep, a, 'IN_PROGRESS')
    const rb = await waitStatus(s, ep, b, 'IN_PROGRESS')
    expect(ra.workerId).toBe(rb.workerId)
    const until = Date.now() + 5_000
    let shown = await jobCall(s, 'GET', `/v2/${ep}/status/${a}`)
    while (shown.body.output === undefined && Date.now() < until)
      shown = await jobCall(s, 'GET', `/v2/${ep}/status/${a}`)
    expect(shown.body).toMatchObject({ status: 'IN_PROGRESS', output: { step: 'started' } })
    const list = await s.api('GET', `/v2/serverless/${ep}/workers`)
    expect(list.status).toBe(200)
    expect(list.body).toMatchObject({
      endpointVersion: 1,
      summary: { running: 1, idle: 0, initializing: 0, throttled: 0, unhealthy: 0, total: 1 },
    })
    expect(list.body.workers[0]).toMatchObject({
      id: ra.workerId,
      status: 'RUNNING',
      isStale: false,
      gpuCount: 0,
      version: 1,
      image: 'test/sdk:latest',
      gpuTypeId: null,
      dataCenterId: 'LOCAL-1',
    })
    expect((await waitFinal(s, ep, a)).output).toEqual({ done: a })
    expect((await waitFinal(s, ep, b)).output).toEqual({ done: b })
  })

  it('sends the results of jobs that finish together in one job-done-batch request, a large one alone', async () => {
    const batched = (
      await createEndpoint(
        s,
        endpointBody('test/sdk-batch:latest', { name: 'batched', workers: { min: 0, max: 1, idleTimeout: 60 } }),
      )
    ).id
    posts.done = 0
    posts.batches.length = 0
    // Queued before the worker has started: it takes them 8 at a time, and 8 finish at about the same moment.
    const inputs = Array.from({ length: 24 }, (_, k) =>
      k === 5
        ? { ms: 50, progress: false, fail: 'job five refuses' }
        : k === 9
          ? { ms: 50, progress: false, big: 1_100_000 }
          : { ms: 50, progress: false },
    )
    const ids = await Promise.all(
      inputs.map(async (input) => (await jobCall(s, 'POST', `/v2/${batched}/run`, { input })).body.id as string),
    )
    const finals = await Promise.all(ids.map((id) => waitFinal(s, batched, id)))
    finals.forEach((job, k) => {
      if (k === 5) expect(job).toMatchObject({ status: 'FAILED', error: 'job five refuses' })
      else if (k === 9)
        expect(job).toMatchObject({ status: 'COMPLETED', output: { done: ids[k], big: 'x'.repeat(1_100_000) } })
      else expect(job).toMatchObject({ status: 'COMPLETED', output: { done: ids[k] } })
    })
    // The large result went alone through job-done; the 23 others through job-done-batch, several per request.
    expect(posts.done).toBe(1)
    expect(posts.batches.reduce((a, b) => a + b, 0)).toBe(23)
    expect(posts.batches.length).toBeLessThan(23)
    expect(Math.max(...posts.batches)).toBeGreaterThan(1)
  })

  it('reports a worker that cannot start, with the reason, as unhealthy', async () => {
    const broken = (await createEndpoint(s, endpointBody('registry.example/unknown:1', { name: 'broken' }))).id
    await jobCall(s, 'POST', `/v2/${broken}/run`, { input: {} })
    const end = Date.now() + 10_000
    let health = (await jobCall(s, 'GET', `/v2/${broken}/health`)).body
    while (health.workers.unhealthy === 0 && Date.now() < end)
      health = (await jobCall(s, 'GET', `/v2/${broken}/health`)).body
    expect(health).toMatchObject({ jobs: { inQueue: 1 }, workers: { unhealthy: 1, running: 0 } })
    const [record] = await s.hangar.store.workers.listRecent(broken, 1)
    expect(record).toMatchObject({
      state: 'FAILED',
      lastError:
        'image "registry.example/unknown:1" has no local command: set the endpoint\'s entrypoint/cmd, or map the image in the "images" configuration',
    })
  })
})

/**
 * A stand-in control plane for the SDK's side of job-done-batch: it hands out the jobs it is given and
 * records what the worker posts; job-done-batch answers with the statuses `batchAnswers` lists (then 200).
 */
class FakeControlPlane {
  readonly server: Server
  readonly batchBodies: string[] = []
  readonly single: Array<{ jobId: string; query: string; body: unknown }> = []
  private readonly jobs: Array<{ id: string; input: unknown }> = []
  private added = 0
  constructor(private readonly batchAnswers: number[]) {
    this.server = createServer((req, res) => void this.handle(req, res))
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v2/ep`
  }

  add(...inputs: unknown[]): string[] {
    const ids = inputs.map((input) => ({ id: `job-${++this.added}`, input }))
    this.jobs.push(...ids)
    return ids.map((j) => j.id)
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks).toString('utf8')
    const url = new URL(req.url ?? '/', 'http://x')
    const send = (status: number, json?: unknown): void => {
      res
        .writeHead(status, { 'content-type': 'application/json' })
        .end(json === undefined ? undefined : JSON.stringify(json))
    }
    if (req.headers.authorization !== 'hw_fake') return send(401, {})
    if (url.pathname.startsWith('/v2/ep/job-take-batch/w1')) {
      const n = Number(url.searchParams.get('batch_size') ?? 1)
      if (this.jobs.length === 0) await new Promise((r) => setTimeout(r, 100))
      const jobs = this.jobs.splice(0, n)
      return jobs.length ? send(200, jobs) : send(204)
    }
    if (url.pathname.startsWith('/v2/ep/job-stop/w1')) {
      await new Promise((r) => setTimeout(r, 500))
      return send(204)
    }
    if (url.pathname === '/v2/ep/job-done-batch/w1') {
      this.batchBodies.push(body)
      const status = this.batchAnswers.shift() ?? 200
      return status === 200
        ? send(200, {
            results: (JSON.parse(body) as Array<{ id: string }>).map((r) => ({
              id: r.id,
              accepted: true,
              status: 'COMPLETED',
            })),
          })
        : send(status, { status })
    }
    const done = /^\/v2\/ep\/job-done\/w1\/([^/]+)$/.exec(url.pathname)
    if (done) {
      this.single.push({ jobId: decodeURIComponent(done[1]), query: url.search, body: JSON.parse(body) })
      return send(200, { accepted: true, status: 'COMPLETED' })
    }
    send(404, {})
  }
}

describe('TypeScript worker SDK against a control plane that answers job-done-batch otherwise', () => {
  let fake: FakeControlPlane
  let worker: ChildProcess | undefined
  const startWorker = (base: string) => {
    worker = spawn(process.execPath, [FIXTURE], {
      env: {
        PATH: process.env.PATH,
        SDK_CONCURRENCY: '4',
        RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/w1?gpu=CPU`,
        RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/w1/$ID?gpu=CPU`,
        RUNPOD_WEBHOOK_POST_STREAM: `${base}/job-stream/w1/$ID?gpu=CPU`,
        HANGAR_WEBHOOK_POST_OUTPUT_BATCH: `${base}/job-done-batch/w1?gpu=CPU`,
        RUNPOD_AI_API_KEY: 'hw_fake',
        RUNPOD_POD_ID: 'w1',
      },
      stdio: 'ignore',
    })
  }
  afterEach(async () => {
    worker?.kill('SIGKILL')
    worker = undefined
    fake.server.closeAllConnections()
    await new Promise((r) => fake.server.close(r))
  })

  it('posts each result through job-done once job-done-batch answers 404, and never tries the batch again', async () => {
    fake = new FakeControlPlane([404])
    startWorker(await fake.start())
    const first = fake.add(...Array.from({ length: 4 }, () => ({ ms: 50, progress: false })))
    await until(async () => fake.single.length >= 4, 20_000, 'the first results')
    const second = fake.add(...Array.from({ length: 4 }, () => ({ ms: 50, progress: false })))
    await until(async () => fake.single.length >= 8, 20_000, 'the second results')
    expect(fake.batchBodies).toHaveLength(1)
    expect(fake.single.map((p) => p.jobId).sort()).toEqual([...first, ...second].sort())
    for (const p of fake.single)
      expect(p).toEqual({ jobId: p.jobId, query: '?gpu=CPU&isStream=false', body: { output: { done: p.jobId } } })
  })

  it('posts the results of a batch refused with a 400 through job-done, and batches the next ones again', async () => {
    fake = new FakeControlPlane([400])
    startWorker(await fake.start())
    const [first] = fake.add({ ms: 50, progress: false })
    await until(async () => fake.single.length >= 1, 20_000, "the refused batch's result, alone")
    expect(JSON.parse(fake.batchBodies[0])).toEqual([{ id: first, output: { done: first } }])
    expect(fake.single).toEqual([{ jobId: first, query: '?gpu=CPU&isStream=false', body: { output: { done: first } } }])
    const [next] = fake.add({ ms: 50, progress: false })
    await until(async () => fake.batchBodies.length >= 2, 20_000, 'the next batch')
    expect(JSON.parse(fake.batchBodies[1])).toEqual([{ id: next, output: { done: next } }])
    expect(fake.single).toHaveLength(1)
  })

  it('posts the results of a failed batch again one by one, without holding back the results that follow', async () => {
    fake = new FakeControlPlane([503])
    startWorker(await fake.start())
    const ids = fake.add(
      { ms: 50, progress: false },
      { ms: 50, progress: false, fail: 'no' },
      { ms: 50, progress: false },
    )
    await until(
      async () => fake.single.length + fake.batchBodies.slice(1).flatMap((b) => JSON.parse(b) as unknown[]).length >= 3,
      20_000,
      'the results',
    )
    // What the failed batch held comes again through job-done, each result once and unchanged.
    const failed = JSON.parse(fake.batchBodies[0]) as Array<{ id: string }>
    expect(fake.single.map((p) => p.jobId).sort()).toEqual(failed.map((r) => r.id).sort())
    const posted = [
      ...fake.single.map((p) => ({ id: p.jobId, ...(p.body as object) })),
      ...fake.batchBodies.slice(1).flatMap((b) => JSON.parse(b) as Array<{ id: string }>),
    ]
    expect(posted.sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id))).toEqual([
      { id: ids[0], output: { done: ids[0] } },
      { id: ids[1], error: 'no' },
      { id: ids[2], output: { done: ids[2] } },
    ])
  })
})
