import { execFile } from 'node:child_process'
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createEndpoint, endpointBody, jobCall } from './helpers/endpoints.js'
import { startTestServer, type TestServer } from './helpers/server.js'

const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '..')
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'

/** The steps of docs/writing-workers.md: a worker project of its own, the SDK installed from a path. */
describe('the hangar/worker SDK in a worker project of its own', { timeout: 180_000 }, () => {
  const project = mkdtempSync(join(tmpdir(), 'hangar-worker-project-'))
  // A project directory as `mkdir` makes it (mkdtemp's is 0700): when the tests run as root, the sandboxed
  // worker runs as uid 65534 and reads the project as others do.
  chmodSync(project, 0o755)
  let s: TestServer
  beforeAll(async () => {
    // `npm install <path to hangar>`, as docs/writing-workers.md says (the built dist is there: npm test builds first).
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'my-worker', version: '1.0.0', type: 'module', private: true }),
    )
    await run(NPM, ['install', '--no-audit', '--no-fund', '--ignore-scripts', ROOT], { cwd: project })
    writeFileSync(
      join(project, 'worker.js'),
      "import { serve } from 'hangar/worker'\nawait serve({ handler: async (job) => ({ greeting: `hello ${job.input.name}` }) })\n",
    )
    s = await startTestServer({
      jobs: { pingIntervalMs: 500 },
      images: { 'acme/my-worker:1': { command: [process.execPath, join(project, 'worker.js')] } },
    })
  })
  afterAll(async () => {
    await s?.stop()
    rmSync(project, { recursive: true, force: true })
  })

  it('runs jobs with the SDK imported as `hangar/worker`', async () => {
    const ep = (await createEndpoint(s, endpointBody('acme/my-worker:1'))).id
    const r = await jobCall(s, 'POST', `/v2/${ep}/runsync?wait=60000`, { input: { name: 'world' } })
    expect(r.body).toMatchObject({
      status: 'COMPLETED',
      output: { greeting: 'hello world' },
      workerId: expect.any(String),
    })
  })
})

/** The SDK as its own package (packages/worker, `npm pack`ed): a worker image gets it without the server's dependencies. */
describe('the @hangar/worker package installed from its tarball', { timeout: 180_000 }, () => {
  const project = mkdtempSync(join(tmpdir(), 'hangar-worker-package-'))
  // Readable by the sandboxed worker (uid 65534 when the tests run as root), as above.
  chmodSync(project, 0o755)
  let s: TestServer
  beforeAll(async () => {
    // prepack copies the SDK out of the dist this run built (packages/worker/build.mjs).
    await run(NPM, ['pack', '--pack-destination', project], { cwd: join(ROOT, 'packages', 'worker') })
    const tarball = readdirSync(project).find((f) => f.endsWith('.tgz'))!
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'my-worker', version: '1.0.0', type: 'module', private: true }),
    )
    await run(NPM, ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', `./${tarball}`], {
      cwd: project,
    })
    writeFileSync(
      join(project, 'worker.js'),
      "import { serve } from '@hangar/worker'\nawait serve({ handler: async (job) => ({ greeting: `hi ${job.input.name}` }) })\n",
    )
    s = await startTestServer({
      jobs: { pingIntervalMs: 500 },
      images: { 'acme/slim-worker:1': { command: [process.execPath, join(project, 'worker.js')] } },
    })
  })
  afterAll(async () => {
    await s?.stop()
    rmSync(project, { recursive: true, force: true })
  })

  it('installs nothing but itself: no fastify, pg, dockerode or better-sqlite3 in the worker project', () => {
    expect(readdirSync(join(project, 'node_modules')).filter((f) => !f.startsWith('.'))).toEqual(['@hangar'])
    expect(readdirSync(join(project, 'node_modules', '@hangar'))).toEqual(['worker'])
  })

  it('runs jobs with the SDK imported as `@hangar/worker`', async () => {
    const ep = (await createEndpoint(s, endpointBody('acme/slim-worker:1'))).id
    const r = await jobCall(s, 'POST', `/v2/${ep}/runsync?wait=60000`, { input: { name: 'image' } })
    expect(r.body).toMatchObject({
      status: 'COMPLETED',
      output: { greeting: 'hi image' },
      workerId: expect.any(String),
    })
  })
})
