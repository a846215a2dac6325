import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { objectHeapAfterGc } from './helpers/heap.js'
import { createPod, podBody, readPodLogs, terminateAll, waitPod } from './helpers/pods.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const KiB = 1024
/** Lines the test pod prints before it says it is ready: a pod whose log were kept would weigh some 150 KiB. */
const LINES = 1_000
/** Followers of each pod's log that read up to `ready` and leave (console tabs closed). */
const FOLLOWERS = 8
const CHATTY = `for (let i = 0; i < ${LINES}; i++) console.log('line ' + i + ' of a pod that says a lot'); console.log('ready'); setInterval(() => {}, 60000)`
/**
 * Growth of the object heap per pod allowed. After warming up, a cycle grows it by some 10 KiB for a while (what
 * V8 keeps of warming code: feedback, inline caches): what a kept pod would add is far above (a stopped program
 * kept by its grace timer: 170 KiB; eight followers kept by their closed connections: 50 KiB).
 */
const LIMIT_PER_POD = 24 * KiB

/**
 * What a terminated pod leaves behind: nothing. Each cycle uses what a pod holds while it lives (its program and
 * log, live metrics, log followers, links to its port), stops it, then terminates it, in a server whose stop grace
 * is long, so that anything kept until a timer ends, or for good, shows in the heap.
 */
describe('pod memory', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startTestServer({
      jobs: { stopGraceMs: 600_000 },
      images: { 'test/chatty:latest': { command: [process.execPath, '-e', CHATTY] } },
    })
  })
  afterAll(async () => {
    await terminateAll(s)
    await s.stop()
  })

  /** One pod from create to terminate; returns its id. */
  async function cycle(): Promise<string> {
    const pod = await waitPod(s, (await createPod(s, podBody({ image: 'test/chatty:latest' }))).id, 'RUNNING')
    for (let i = 0; i < FOLLOWERS; i++) await readPodLogs(s, pod.id, { match: /^ready$/ })
    expect((await s.api('GET', `/v2/pods/${pod.id}`)).body.runtime).not.toBeNull()
    expect((await s.api('GET', `/v2/pods/${pod.id}/connections`)).body.http).toHaveLength(1)
    expect((await s.api('POST', `/v2/pods/${pod.id}/action`, { action: 'stop' })).body.status).toBe('EXITED')
    expect((await s.api('DELETE', `/v2/pods/${pod.id}`)).status).toBe(204)
    return pod.id
  }

  it('keeps no state and no file of a terminated pod', async () => {
    const id = await cycle()
    expect(s.hangar.pods.runner.heldFor(id)).toEqual([])
    expect(existsSync(join(s.dataDir, 'pod-logs', `${id}.log`)), 'pod log').toBe(false)
    expect(existsSync(join(s.dataDir, 'pods', id)), "the runtime's folder of the pod").toBe(false)
  })

  it('does not grow the heap with every pod', async () => {
    // Warm-up: the first cycles of each code path grow the heap by what V8 keeps of them.
    for (let i = 0; i < 20; i++) await cycle()
    const before = await objectHeapAfterGc()
    const cycles = 30
    for (let i = 0; i < cycles; i++) await cycle()
    const perPod = ((await objectHeapAfterGc()) - before) / cycles
    expect(perPod, `the heap grew by ${(perPod / KiB).toFixed(1)} KiB per pod`).toBeLessThan(LIMIT_PER_POD)
  }, 60_000)
})
