// Builds @hangar/worker from the main package's build (run `npm run build` at the root first; it runs this too):
// dist/worker/*.js, which loads Node built-ins only (src/worker/footprint.test.ts holds it so), and the
// declarations those files reach through relative imports (dist/contract/*.d.ts for the job and result types,
// which name typebox: an optional peer dependency, needed only by TypeScript users who want those types).
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

const here = import.meta.dirname
const built = resolve(here, '../../dist')
const out = join(here, 'dist')
if (!existsSync(join(built, 'worker/index.js'))) {
  console.error(
    `@hangar/worker: ${join(built, 'worker/index.js')} is missing; run \`npm run build\` at the repository root first`,
  )
  process.exit(1)
}
rmSync(out, { recursive: true, force: true })

const copied = new Set()
const copy = (file) => {
  if (copied.has(file)) return
  copied.add(file)
  const target = join(out, relative(built, file))
  mkdirSync(dirname(target), { recursive: true })
  cpSync(file, target)
  if (!file.endsWith('.d.ts')) return
  // Follow the declarations' relative imports (`from '../contract/worker.js'`, `import("./common.js")`).
  for (const m of readFileSync(file, 'utf8').matchAll(/(?:from\s+|import\()\s*['"](\.[^'"]+)\.js['"]/g)) {
    copy(resolve(dirname(file), `${m[1]}.d.ts`))
  }
}
for (const name of readdirSync(join(built, 'worker'))) {
  if (!/\.test\./.test(name) && !name.endsWith('.map')) copy(join(built, 'worker', name))
}
console.log(`@hangar/worker: ${copied.size} files in ${relative(process.cwd(), out) || '.'}`)
