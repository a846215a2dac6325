import { execFile } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { spawnServe } from './helpers/process.js'

const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '..')
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm'

interface LockEntry {
  version: string
  name?: string
  dev?: boolean
  [k: string]: unknown
}

/**
 * A package-lock for a project depending on the packed tarball alone, pinned to the versions of our own lock
 * (production entries only), so `npm ci --offline` installs from the npm cache. Our lock records no
 * `resolved` URLs and the cache holds abbreviated packuments only, which a lock-less offline install cannot
 * use; the registry URL of each tarball is spelled out instead (the cache is keyed by it).
 */
function projectLock(tarball: string): object {
  const root = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, LockEntry>
  }
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>
  const packages: Record<string, unknown> = {
    '': { name: 'server-project', version: '1.0.0', dependencies: { hangar: `file:${tarball}` } },
    'node_modules/hangar': {
      version: pkg.version,
      resolved: `file:${tarball}`,
      license: pkg.license,
      dependencies: pkg.dependencies,
      bin: pkg.bin,
      engines: pkg.engines,
    },
  }
  for (const [path, entry] of Object.entries(root.packages)) {
    if (!path || entry.dev) continue
    const name = entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)
    packages[path] = {
      resolved: `https://registry.npmjs.org/${name}/-/${name.split('/').pop()}-${entry.version}.tgz`,
      ...entry,
    }
  }
  return { name: 'server-project', version: '1.0.0', lockfileVersion: 3, requires: true, packages }
}

/** `npm pack` of the built checkout (npm test builds first), installed into a clean project as a user would. */
describe('the packed hangar tarball installed in a project of its own', { timeout: 240_000 }, () => {
  const project = mkdtempSync(join(tmpdir(), 'hangar-pack-project-'))
  let files: string[] = []
  beforeAll(async () => {
    // --ignore-scripts: no prepack rebuild, the tarball is the dist this run built.
    const { stdout } = await run(NPM, ['pack', '--json', '--ignore-scripts', '--pack-destination', project], {
      cwd: ROOT,
    })
    const [packed] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
    files = packed.files.map((f) => f.path)
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({
        name: 'server-project',
        version: '1.0.0',
        private: true,
        type: 'module',
        dependencies: { hangar: `file:${packed.filename}` },
      }),
    )
    writeFileSync(join(project, 'package-lock.json'), JSON.stringify(projectLock(packed.filename)))
    await run(NPM, ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: project })
    // better-sqlite3's install script downloads or compiles its native addon, which an offline install cannot
    // do: the addon this checkout built (same version, same Node) stands in for it.
    const addon = join('node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node')
    mkdirSync(join(project, addon, '..'), { recursive: true })
    copyFileSync(join(ROOT, addon), join(project, addon))
  })
  afterAll(() => rmSync(project, { recursive: true, force: true }))

  it('holds the build, the bin, the migrations and the manual, and no sources, tests or source maps', () => {
    for (const f of [
      'bin/hangar.js',
      'dist/main.js',
      'dist/cli/main.js',
      'dist/worker/index.js',
      'dist/contract/index.d.ts',
      'dist/console/index.html',
      'README.md',
      'docs/README.md',
      'docs/reference/configuration.md',
      'docs/console-pods.png',
    ]) {
      expect(files).toContain(f)
    }
    // The manual's pages and screenshots, not the script that takes them or the Grafana dashboard.
    expect(files.filter((f) => f.startsWith('docs/') && !/\.(md|png)$/.test(f))).toEqual([])
    expect(files.some((f) => f.startsWith('dist/store/sqlite/migrations/'))).toBe(true)
    expect(files.some((f) => f.startsWith('dist/store/postgres/migrations/'))).toBe(true)
    expect(files.filter((f) => /\.test\.|\.map$|^src\/|^test\/|^console\/|^bench\//.test(f))).toEqual([])
  })

  it('`hangar serve` starts and answers /v2/openapi.json', async () => {
    const bin = join(project, 'node_modules', 'hangar', 'bin', 'hangar.js')
    expect(existsSync(bin)).toBe(true)
    const p = await spawnServe(join(project, 'data'), {}, bin)
    try {
      const res = await fetch(`${p.url}/v2/openapi.json`)
      expect(res.status).toBe(200)
      expect(((await res.json()) as { openapi: string }).openapi).toMatch(/^3\./)
      // The installation carries its own manual, for the console's Docs page.
      const doc = await fetch(`${p.url}/console/docs/getting-started.md`)
      expect(doc.status).toBe(200)
      expect(await doc.text()).toMatch(/^# Getting started\n/)
    } finally {
      p.child.kill('SIGTERM')
      expect(await p.exited).toBe(0)
    }
  })

  it('`hangar/worker` and `hangar/contract` import', async () => {
    const script =
      "const w = await import('hangar/worker'); const c = await import('hangar/contract'); console.log(JSON.stringify({ serve: typeof w.serve, job: typeof c.JobRequest }))"
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: project })
    expect(JSON.parse(stdout)).toEqual({ serve: 'function', job: 'object' })
  })
})
