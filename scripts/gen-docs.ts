/**
 * `npm run docs`: writes the generated pages of the manual (see docsReference.ts). `npm run docs:check` (also
 * part of `npm test`, through test/docs.test.ts) writes nothing and fails when a committed page is out of date.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { GENERATED_DOCS } from './docsReference.js'

const root = join(import.meta.dirname, '..')
const check = process.argv.includes('--check')
let stale = 0
for (const [file, render] of Object.entries(GENERATED_DOCS)) {
  const path = join(root, file)
  const text = render()
  let current: string | null = null
  try {
    current = readFileSync(path, 'utf8')
  } catch {}
  if (current === text) continue
  if (check) {
    stale++
    console.error(`${file} is out of date: run \`npm run docs\` and commit it`)
  } else {
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, text)
    console.log(`wrote ${file}`)
  }
}
process.exitCode = stale ? 1 : 0
