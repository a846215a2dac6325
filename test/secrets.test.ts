import { createHash, randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody } from './helpers/endpoints.js'
import { createPod, podBody, terminateAll, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'
import { until } from './helpers/until.js'

/** Prints the sha256 of $TOKEN (never the value itself), then stays up. */
const PRINT_HASH = `const t = process.env.TOKEN; console.log('token-sha=' + (t === undefined ? 'unset' : require('node:crypto').createHash('sha256').update(t).digest('hex'))); setInterval(() => {}, 1e9)`
const sha = (v: string) => createHash('sha256').update(v).digest('hex')
const REF = '{{ RUNPOD_SECRET_api_token }}'

/** Reads a log stream (SSE) with `key` until a line matches; returns the lines seen. */
async function logLines(url: string, key: string, match: RegExp, timeoutMs = 15_000): Promise<string[]> {
  const ac = new AbortController()
  const timer = setTimeout(() => ac.abort(), timeoutMs)
  const lines: string[] = []
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${key}` }, signal: ac.signal })
    expect(res.status).toBe(200)
    let buf = ''
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += Buffer.from(chunk).toString()
      for (let sep = buf.indexOf('\n\n'); sep >= 0; sep = buf.indexOf('\n\n')) {
        const data = /^data: (.*)$/m.exec(buf.slice(0, sep))?.[1]
        buf = buf.slice(sep + 2)
        if (!data) continue
        lines.push(JSON.parse(data).line)
        if (match.test(lines[lines.length - 1])) return lines
      }
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err
  } finally {
    clearTimeout(timer)
    ac.abort()
  }
  throw new Error(`no log line matched ${match}; saw ${lines.join(' | ')}`)
}

describe('secrets (/v2/secrets)', () => {
  let s: TestServer
  let alice: string
  let bob: string
  const v1 = `alice-${randomBytes(12).toString('hex')}`
  const v2 = `alice-rotated-${randomBytes(12).toString('hex')}`
  const bobValue = `bob-${randomBytes(12).toString('hex')}`
  /** Every answer's text, to show no secret value ever leaves the server. */
  const seen: string[] = []
  const api = async (method: string, path: string, body?: unknown, key?: string | null) => {
    const r = await s.api(method, path, body, key)
    seen.push(JSON.stringify(r.body ?? ''))
    return r
  }

  beforeAll(async () => {
    s = await startTestServer({ images: { 'test/env:1': { command: [process.execPath, '-e', PRINT_HASH] } } })
    alice = await s.accountKey('alice')
    bob = await s.accountKey('bob')
  })
  afterAll(async () => {
    await terminateAll(s, alice).catch((err) => console.error('terminating alice pods', err))
    await terminateAll(s, bob).catch((err) => console.error('terminating bob pods', err))
    await s?.stop()
  })

  it('creates, lists, gets (by id or name), rotates and deletes a secret, never showing its value', async () => {
    const created = await api(
      'POST',
      '/v2/secrets',
      { name: 'scratch', value: 'hunter2-scratch', description: 'd' },
      alice,
    )
    expect(created.status).toBe(201)
    expect(created.body).toEqual({
      id: expect.stringMatching(/^sec_/),
      name: 'scratch',
      description: 'd',
      version: 1,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    })
    const id = created.body.id
    expect((await api('GET', '/v2/secrets', undefined, alice)).body.secrets.map((x: any) => x.name)).toEqual([
      'scratch',
    ])
    expect((await api('GET', `/v2/secrets/${id}`, undefined, alice)).body.name).toBe('scratch')
    expect((await api('GET', '/v2/secrets/scratch', undefined, alice)).body.id).toBe(id)
    const rotated = await api('PATCH', '/v2/secrets/scratch', { value: 'hunter3-scratch' }, alice)
    expect(rotated.status).toBe(200)
    expect(rotated.body.version).toBe(2)
    expect((await api('PATCH', `/v2/secrets/${id}`, { description: 'e' }, alice)).body).toMatchObject({
      version: 2,
      description: 'e',
    })
    const dup = await api('POST', '/v2/secrets', { name: 'scratch', value: 'x' }, alice)
    expect([dup.status, dup.body.detail]).toEqual([409, 'a secret named "scratch" already exists'])
    const badName = await api('POST', '/v2/secrets', { name: 'no spaces', value: 'x' }, alice)
    expect(badName.status).toBe(422)
    expect((await api('PATCH', `/v2/secrets/${id}`, {}, alice)).status).toBe(422)
    // Another account neither sees nor changes it, by id or by name.
    for (const ref of [id, 'scratch']) {
      expect((await api('GET', `/v2/secrets/${ref}`, undefined, bob)).status).toBe(404)
      expect((await api('PATCH', `/v2/secrets/${ref}`, { value: 'stolen' }, bob)).status).toBe(404)
      expect((await api('DELETE', `/v2/secrets/${ref}`, undefined, bob)).status).toBe(404)
    }
    expect((await api('GET', '/v2/secrets', undefined, bob)).body.secrets).toEqual([])
    expect((await api('DELETE', '/v2/secrets/scratch', undefined, alice)).status).toBe(204)
    expect((await api('GET', `/v2/secrets/${id}`, undefined, alice)).status).toBe(404)
    expect(seen.join('\n')).not.toContain('hunter')
  })

  it('refuses env referencing a secret the account lacks, also when another account has one of that name', async () => {
    await api('POST', '/v2/secrets', { name: 'api_token', value: v1 }, alice)
    const refused = await api('POST', '/v2/templates', { name: 't-bob', image: 'test/env:1', env: { TOKEN: REF } }, bob)
    expect(refused.status, JSON.stringify(refused.body)).toBe(422)
    expect(refused.body.detail).toBe('secret "api_token" (referenced by env TOKEN) does not exist in this account')
    const pod = await api('POST', '/v2/pods', podBody({ image: 'test/env:1', ports: [], env: { TOKEN: REF } }), bob)
    expect(pod.status).toBe(422)
    const ep = await api('POST', '/v2/serverless', endpointBody('test/env:1', { env: { TOKEN: REF } }), bob)
    expect(ep.status).toBe(422)
    // The control: the owner may reference it, and the reference is what is stored and shown.
    const ok = await api('POST', '/v2/templates', { name: 't-alice', image: 'test/env:1', env: { TOKEN: REF } }, alice)
    expect(ok.status, JSON.stringify(ok.body)).toBe(201)
    expect(ok.body.env).toEqual({ TOKEN: REF })
  })

  it("puts the owner's value in a pod's env at each start (a rotation at the next), never another account's", async () => {
    await api('POST', '/v2/secrets', { name: 'api_token', value: bobValue }, bob)
    const body = podBody({ name: 'env', image: 'test/env:1', ports: [], env: { TOKEN: `${REF}` } })
    const a = await createPod(s, body, alice)
    const b = await createPod(s, body, bob)
    await waitPod(s, a.id, 'RUNNING', alice)
    await waitPod(s, b.id, 'RUNNING', bob)
    const podLog = (id: string, key: string, match: RegExp) =>
      logLines(`${s.url}/v2/pods/${id}/logs?tail=1000`, key, match)
    const aLines = await podLog(a.id, alice, new RegExp(`token-sha=${sha(v1)}`))
    await podLog(b.id, bob, new RegExp(`token-sha=${sha(bobValue)}`))
    expect((await api('GET', `/v2/pods/${a.id}`, undefined, alice)).body.env).toEqual({ TOKEN: REF })
    // Rotated: the running pod keeps its value; its next start gets the new one.
    await api('PATCH', '/v2/secrets/api_token', { value: v2 }, alice)
    expect((await api('POST', `/v2/pods/${a.id}/action`, { action: 'stop' }, alice)).status).toBe(200)
    await waitPod(s, a.id, 'EXITED', alice)
    expect((await api('POST', `/v2/pods/${a.id}/action`, { action: 'start' }, alice)).status).toBe(200)
    await waitPod(s, a.id, 'RUNNING', alice)
    const after = await podLog(a.id, alice, new RegExp(`token-sha=${sha(v2)}`))
    // Bob's secret gone: his pod's next start fails saying which, though Alice has one of that name.
    expect((await api('DELETE', '/v2/secrets/api_token', undefined, bob)).status).toBe(204)
    await api('POST', `/v2/pods/${b.id}/action`, { action: 'stop' }, bob)
    await waitPod(s, b.id, 'EXITED', bob)
    await api('POST', `/v2/pods/${b.id}/action`, { action: 'start' }, bob)
    await waitPod(s, b.id, 'ERROR', bob)
    const why = await podLog(b.id, bob, /could not be started/)
    expect(why.at(-1)).toContain('secret "api_token" (referenced by env TOKEN) does not exist in this account')
    const logText = [...aLines, ...after, ...why].join('\n')
    for (const v of [v1, v2, bobValue]) {
      expect(logText).not.toContain(v)
      expect(seen.join('\n')).not.toContain(v)
    }
  })

  it("puts the value in a serverless worker's env as it starts", async () => {
    const ep = await createEndpoint(
      s,
      endpointBody('test/env:1', { env: { TOKEN: REF }, workers: { min: 1, max: 1, idleTimeout: 60 } }),
      alice,
    )
    const worker = await until(async () => {
      const r = await api('GET', `/v2/serverless/${ep.id}/workers`, undefined, alice)
      return r.body?.workers?.[0] ?? r.body?.[0]
    })
    // A worker's log stream ends with what it has while the worker starts: read it again until the line is in.
    const lines = await until(
      () =>
        logLines(
          `${s.url}/v2/serverless/${ep.id}/workers/${worker.id}/logs?tail=1000`,
          alice,
          new RegExp(`token-sha=${sha(v2)}`),
        ).catch(() => false as const),
      20_000,
      "the worker's token line",
    )
    expect(lines.join('\n')).not.toContain(v2)
    expect((await api('GET', `/v2/serverless/${ep.id}`, undefined, alice)).body.env).toEqual({ TOKEN: REF })
    await api('DELETE', `/v2/serverless/${ep.id}`, undefined, alice)
  })

  it("says why a job waits when its endpoint's secret is gone: the worker's start failed naming it", async () => {
    await api('POST', '/v2/secrets', { name: 'gone', value: 'soon-deleted' }, alice)
    const ep = await createEndpoint(
      s,
      endpointBody('test/env:1', { env: { TOKEN: '{{ RUNPOD_SECRET_gone }}' } }),
      alice,
    )
    expect((await api('DELETE', '/v2/secrets/gone', undefined, alice)).status).toBe(204)
    const job = await api('POST', `/v2/${ep.id}/run`, { input: {} }, alice)
    expect(job.status).toBe(200)
    const why = 'secret "gone" (referenced by env TOKEN) does not exist in this account'
    const status = await until(
      async () => {
        const r = await api('GET', `/v2/${ep.id}/status/${job.body.id}`, undefined, alice)
        return r.body?.waitingReason?.includes(why) ? r.body : undefined
      },
      20_000,
      'a waiting reason naming the missing secret',
    )
    expect(status.status).toBe('IN_QUEUE')
    const workers = await api('GET', `/v2/serverless/${ep.id}/workers`, undefined, alice)
    expect(workers.body.workers[0].lastError).toBe(why)
    expect(workers.body.waiting.reason.code).toBe('CRASH_LOOP')
    await api('DELETE', `/v2/serverless/${ep.id}`, undefined, alice)
  })
})
