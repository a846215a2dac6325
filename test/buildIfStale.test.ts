import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'

const SCRIPT = fileURLToPath(new URL('../scripts/build-if-stale.mjs', import.meta.url))

/** `npm start`'s prestart on a project whose build only counts its runs. */
describe('npm start builds only when sources are newer than dist', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-prestart-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({
      name: 'x',
      private: true,
      scripts: {
        build:
          "node -e \"require('fs').mkdirSync('dist',{recursive:true});require('fs').appendFileSync('builds','x')\"",
      },
    }),
  )
  mkdirSync(join(dir, 'src'))
  writeFileSync(join(dir, 'src', 'a.ts'), 'export {}\n')
  const prestart = () => spawnSync(process.execPath, [SCRIPT], { cwd: dir, encoding: 'utf8' })
  const builds = () => readFileSync(join(dir, 'builds'), 'utf8').length

  it('builds a fresh clone, skips an unchanged one, rebuilds after a source changes', () => {
    expect(prestart().status).toBe(0)
    expect(builds()).toBe(1)
    const again = prestart()
    expect(again.stdout).toContain('dist/ is up to date with the sources: not rebuilding')
    expect(builds()).toBe(1)
    const later = Date.now() / 1000 + 5
    utimesSync(join(dir, 'src', 'a.ts'), later, later)
    expect(prestart().status).toBe(0)
    expect(builds()).toBe(2)
  })
})
