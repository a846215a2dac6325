import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '..')
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'

/** `hangar/contract` as a client project sees it: installed from a path, resolved through package.json exports. */
describe('the hangar/contract export in a project of its own', { timeout: 120_000 }, () => {
  const project = mkdtempSync(join(tmpdir(), 'hangar-contract-project-'))
  beforeAll(async () => {
    // The built dist is there: npm test builds first.
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'my-client', version: '1.0.0', type: 'module', private: true }),
    )
    await run(NPM, ['install', '--no-audit', '--no-fund', '--ignore-scripts', ROOT], { cwd: project })
  })
  afterAll(() => rmSync(project, { recursive: true, force: true }))

  it('exports the public schemas and keeps server-only helpers out', async () => {
    const script = [
      "import * as c from 'hangar/contract'",
      'console.log(JSON.stringify({ endpoint: c.Endpoint?.type, required: c.JobRequest?.required, statuses: c.JobStatus?.enum, closed: typeof c.Closed }))',
    ].join('\n')
    writeFileSync(join(project, 'client.js'), script)
    const { stdout } = await run(process.execPath, ['client.js'], { cwd: project })
    expect(JSON.parse(stdout)).toEqual({
      endpoint: 'object',
      required: ['input'],
      statuses: expect.arrayContaining(['IN_QUEUE', 'COMPLETED']),
      closed: 'undefined',
    })
  })
})
