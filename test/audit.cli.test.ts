import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { main } from '../src/cli/main.js'
import { startTestServer, type TestServer } from './helpers/server.js'

describe('hangar secrets and hangar audit', () => {
  let s: TestServer
  let key: string
  beforeAll(async () => {
    s = await startTestServer()
    key = await s.accountKey('carol')
  })
  afterAll(() => s.stop())

  /** Runs the CLI in this process against the test server with carol's key; returns its exit code and output. */
  async function hangar(...args: string[]): Promise<{ code: number; out: string }> {
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true)
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    const log = vi.spyOn(console, 'error').mockImplementation(() => {})
    try {
      const code = await main([...args, '--url', s.url, '--api-key', key])
      return { code, out: [...out.mock.calls, ...err.mock.calls, ...log.mock.calls].map((c) => String(c[0])).join('') }
    } finally {
      out.mockRestore()
      err.mockRestore()
      log.mockRestore()
    }
  }

  it('creates, rotates, lists and deletes secrets without ever printing a value', async () => {
    const created = await hangar('secrets', 'create', 'HF_TOKEN', '--value', 'hf-value-1', '--description', 'hub')
    expect(created.code).toBe(0)
    expect(created.out).toMatch(/^id:\s+sec_\w+\nname:\s+HF_TOKEN\n/)
    expect((await hangar('secrets', 'update', 'HF_TOKEN', '--value', 'hf-value-2')).out).toMatch(/version:\s+2\n/)
    const list = await hangar('secrets', 'list')
    expect(list.out).toMatch(/^NAME\s+VERSION\s+UPDATED\s+ID\s+DESCRIPTION\nHF_TOKEN\s+2\s+\S+\s+sec_\w+\s+hub\n$/)
    expect((await hangar('secrets', 'update', 'HF_TOKEN')).code).not.toBe(0)
    expect((await hangar('secrets', 'delete', 'HF_TOKEN')).out).toBe('deleted HF_TOKEN\n')
    const all = [created, list].map((r) => r.out).join('')
    expect(all).not.toContain('hf-value')
  })

  it('lists the audit log as a table and exports it as JSON lines, with filters', async () => {
    const table = await hangar('audit', 'list', '--action', 'secret.')
    expect(table.code).toBe(0)
    const rows = table.out.trim().split('\n')
    expect(rows[0]).toMatch(/^AT\s+ACTION\s+RESOURCE\s+OUTCOME\s+ACTOR\s+IP$/)
    // The update without a value or description was refused by the CLI itself: it never reached the server.
    expect(rows.slice(1).map((r) => r.split(/\s+/).slice(1, 4))).toEqual([
      ['secret.delete', 'HF_TOKEN', 'success'],
      ['secret.update', 'HF_TOKEN', 'success'],
      ['secret.create', expect.stringMatching(/^sec_/), 'success'],
    ])
    const paged = await hangar('audit', 'list', '--limit', '1')
    expect(paged.out).toMatch(/\(older entries: --cursor \d+\)\n$/)
    const exported = await hangar('audit', 'export', '--resource-type', 'secret')
    expect(exported.code).toBe(0)
    const lines = exported.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.map((e) => e.action)).toEqual(['secret.delete', 'secret.update', 'secret.create'])
    expect(exported.out).not.toContain('hf-value')
  })
})
