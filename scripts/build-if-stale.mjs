#!/usr/bin/env node
// `npm start`'s prestart: runs `npm run build` only when a source is newer than the last build (or there is
// none, as on a fresh clone), so a start does not rebuild everything every time.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const root = process.cwd()
const stamp = join(root, 'dist', '.build-stamp')
const SOURCES = ['src', 'console', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']

/** The newest modification time under `path` (skipping node_modules and dist). */
function newest(path) {
  if (!existsSync(path)) return 0
  const st = statSync(path)
  if (!st.isDirectory()) return st.mtimeMs
  let max = st.mtimeMs
  for (const entry of readdirSync(path)) {
    if (entry === 'node_modules' || entry === 'dist') continue
    max = Math.max(max, newest(join(path, entry)))
  }
  return max
}

const built = existsSync(stamp) ? statSync(stamp).mtimeMs : 0
const changed = Math.max(...SOURCES.map((s) => newest(join(root, s))))
if (built > 0 && changed <= built) {
  console.log('dist/ is up to date with the sources: not rebuilding (npm run build forces it)')
  process.exit(0)
}
const started = Date.now()
const r = spawnSync('npm', ['run', 'build'], { stdio: 'inherit', cwd: root })
if (r.status !== 0) process.exit(r.status ?? 1)
// The stamp takes the time the build started: a source saved during the build still counts as newer.
writeFileSync(stamp, '')
const { utimesSync } = await import('node:fs')
utimesSync(stamp, started / 1000, started / 1000)
