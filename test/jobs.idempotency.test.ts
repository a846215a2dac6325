import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ManualClock } from './helpers/clock.js'
import { createEndpoint, endpointBody } from './helpers/endpoints.js'
import { dropSchema, freshSchemaName, pgAvailableOrSkip, PG_TEST_URL } from './helpers/postgres.js'
import { startReplica, type Replica } from './helpers/replicas.js'
import { startTestServer, type TestServer } from './helpers/server.js'

/** POSTs a submission with an Idempotency-Key (or none: `key` undefined). */
async function submit(
  base: string,
  apiKey: string,
  path: string,
  body: unknown,
  key?: string,
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }
  if (key !== undefined) headers['idempotency-key'] = key
  const res = await fetch(base + path, { method: 'POST', headers, body: JSON.stringify(body) })
  return { status: res.status, body: await res.json() }
}

/** 100 submissions with one key at once: exactly one job; each answer is that job (200) or "still being accepted" (409). */
async function hundredAtOnce(
  targets: Array<(body: unknown, key: string) => Promise<{ status: number; body: any }>>,
): Promise<string> {
  const key = `burst-${Math.random()}`
  const answers = await Promise.all(
    Array.from({ length: 100 }, (_, i) => targets[i % targets.length]({ input: { n: 1 } }, key)),
  )
  const ids = new Set(answers.filter((a) => a.status === 200).map((a) => a.body.id))
  expect(answers.filter((a) => a.status !== 200 && a.status !== 409)).toEqual([])
  expect(ids.size).toBe(1)
  for (const a of answers.filter((a) => a.status === 409)) expect(a.body.detail).toMatch(/still being accepted/)
  return [...ids][0]
}

describe('Idempotency-Key on /run and /runsync', () => {
  let s: TestServer
  let parked: string
  let echo: string
  const run = (body: unknown, key?: string, ep = parked) => submit(s.url, s.adminKey, `/v2/${ep}/run`, body, key)
  beforeAll(async () => {
    s = await startTestServer({ jobs: { pingIntervalMs: 500 } })
    // No workers: its jobs stay IN_QUEUE, so every job made is still there to count.
    parked = (
      await createEndpoint(s, endpointBody('hangar/echo:latest', { name: 'parked', workers: { min: 0, max: 0 } }))
    ).id
    echo = (await createEndpoint(s, endpointBody('hangar/echo:latest'))).id
  })
  afterAll(() => s.stop())

  const queued = async (ep = parked) => (await s.api('GET', `/v2/${ep}/health`)).body.jobs.inQueue as number

  it('answers a repeated submission with the original job, making no second one', async () => {
    const before = await queued()
    const first = await run({ input: { a: 1 } }, 'k-repeat')
    expect(first.status).toBe(200)
    const again = await run({ input: { a: 1 } }, '"k-repeat"')
    expect(again).toEqual({ status: 200, body: { id: first.body.id, status: 'IN_QUEUE' } })
    expect(await queued()).toBe(before + 1)
  })

  it('refuses the same key with another body (422) and keeps keys apart per endpoint', async () => {
    const first = await run({ input: { a: 1 } }, 'k-body')
    const other = await run({ input: { a: 2 } }, 'k-body')
    expect(other.status).toBe(422)
    expect(other.body.detail).toContain(`was used for job "${first.body.id}" with another request body`)
    // /runsync with the key of a /run is another request.
    const sync = await submit(s.url, s.adminKey, `/v2/${parked}/runsync?wait=1000`, { input: { a: 1 } }, 'k-body')
    expect(sync.status).toBe(422)
    // Another endpoint: the key is free there.
    const elsewhere = await run({ input: { a: 1 } }, 'k-body', echo)
    expect(elsewhere.status).toBe(200)
    expect(elsewhere.body.id).not.toBe(first.body.id)
  })

  it('runs a /runsync once: the repeat answers with the first result', async () => {
    const first = await submit(s.url, s.adminKey, `/v2/${echo}/runsync`, { input: { hello: 'once' } }, 'k-sync')
    expect(first.status).toBe(200)
    expect(first.body.status).toBe('COMPLETED')
    const again = await submit(s.url, s.adminKey, `/v2/${echo}/runsync`, { input: { hello: 'once' } }, 'k-sync')
    expect(again.status).toBe(200)
    expect(again.body).toEqual(first.body)
    const recent = (await s.api('GET', `/v2/${echo}/requests`)).body.requests.filter((r: { sync: boolean }) => r.sync)
    expect(recent.map((r: { id: string }) => r.id)).toEqual([first.body.id])
  })

  it('names the header and the rule for a malformed key', async () => {
    const r = await run({ input: {} }, '"unterminated')
    expect(r.status).toBe(400)
    expect(r.body.detail).toMatch(/^Idempotency-Key header: .* not a well-formed quoted string/)
    expect((await run({ input: {} }, 'x'.repeat(256))).body.detail).toBe(
      'Idempotency-Key header: must be at most 255 characters, got 256',
    )
  })

  it('leaves submissions without a key alone', async () => {
    const before = await queued()
    const a = await run({ input: { same: true } })
    const b = await run({ input: { same: true } })
    expect(a.body.id).not.toBe(b.body.id)
    expect(await queued()).toBe(before + 2)
  })

  it('makes exactly one job of 100 concurrent submissions with one key', async () => {
    const before = await queued()
    await hundredAtOnce([(body, key) => run(body, key)])
    expect(await queued()).toBe(before + 1)
  })
})

describe('Idempotency-Key of a job no longer kept', () => {
  it('answers 404 saying so until the window ends, then makes a new job', async () => {
    const clock = new ManualClock()
    const s = await startTestServer({ jobs: { idempotencyWindowMs: 3_600_000 } }, { clock })
    try {
      const ep = (await createEndpoint(s, endpointBody('hangar/echo:latest', { workers: { min: 0, max: 0 } }))).id
      const body = { input: { gone: true }, policy: { ttl: 10_000 } }
      const first = await submit(s.url, s.adminKey, `/v2/${ep}/run`, body, 'k-gone')
      clock.advance(10_000)
      const again = await submit(s.url, s.adminKey, `/v2/${ep}/run`, body, 'k-gone')
      expect(again.status).toBe(404)
      expect(again.body.detail).toBe(
        `job "${first.body.id}", submitted earlier with Idempotency-Key "k-gone", is no longer kept (its TTL or result retention elapsed); it is not run again: send a new key to submit it anew`,
      )
      // Once the key's window ended, the key makes a new job.
      clock.advance(3_600_000)
      const fresh = await submit(s.url, s.adminKey, `/v2/${ep}/run`, body, 'k-gone')
      expect(fresh.status).toBe(200)
      expect(fresh.body.id).not.toBe(first.body.id)
    } finally {
      await s.stop()
    }
  })
})

describe('Idempotency-Key across a restart', () => {
  it('still names its job after the server restarts on the same data', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hangar-idem-'))
    try {
      let s = await startTestServer({}, { dataDir })
      const ep = (await createEndpoint(s, endpointBody('hangar/echo:latest', { workers: { min: 0, max: 0 } }))).id
      const first = await submit(s.url, s.adminKey, `/v2/${ep}/run`, { input: { r: 1 } }, 'k-restart')
      await s.stop()
      s = await startTestServer({}, { dataDir })
      try {
        const again = await submit(s.url, s.adminKey, `/v2/${ep}/run`, { input: { r: 1 } }, 'k-restart')
        expect(again).toEqual({ status: 200, body: { id: first.body.id, status: 'IN_QUEUE' } })
        expect((await s.api('GET', `/v2/${ep}/health`)).body.jobs.inQueue).toBe(1)
      } finally {
        await s.stop()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

const pgUp = await pgAvailableOrSkip('the two-replica Idempotency-Key test')

describe.skipIf(!pgUp)('Idempotency-Key on two PostgreSQL replicas', () => {
  const schema = freshSchemaName('hangar_idem')
  const dataDir = mkdtempSync(join(tmpdir(), 'hangar-idem-replicas-'))
  const replicas: Replica[] = []
  afterAll(async () => {
    for (const r of replicas) if (r.proc.exitCode === null) r.proc.kill('SIGKILL')
    await dropSchema(schema).catch(() => undefined)
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('makes exactly one job of 100 concurrent submissions with one key, half to each replica', async () => {
    const configFile = join(dataDir, 'config.json')
    writeFileSync(
      configFile,
      JSON.stringify({
        host: '127.0.0.1',
        port: 0,
        logLevel: 'warn',
        fleet: { detectGpus: false },
        databaseUrl: PG_TEST_URL,
        databaseSchema: schema,
      }),
    )
    replicas.push(await startReplica('a', dataDir, configFile))
    replicas.push(await startReplica('b', dataDir, configFile))
    const [a, b] = replicas
    const apiKey = readFileSync(join(dataDir, 'admin-key'), 'utf8').trim()
    const created = await fetch(`${a.url}/v2/serverless`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(endpointBody('hangar/echo:latest', { workers: { min: 0, max: 0 } })),
    })
    const ep = ((await created.json()) as { id: string }).id
    const id = await hundredAtOnce(
      [a, b].map((r) => (body: unknown, key: string) => submit(r.url, apiKey, `/v2/${ep}/run`, body, key)),
    )
    const db = new pg.Client({ connectionString: PG_TEST_URL })
    await db.connect()
    try {
      const { rows } = await db.query(`SELECT id FROM "${schema}".jobs WHERE endpoint_id = $1`, [ep])
      expect(rows.map((r) => r.id)).toEqual([id])
    } finally {
      await db.end()
    }
    // Two server processes start: generous on a loaded machine.
  }, 120_000)
})
