import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { MAX_DONE_BATCH } from '../contract/workerLimits.js'
import { MAX_DONE_BATCH as SDK_MAX_DONE_BATCH } from './results.js'

/**
 * The run-time imports reachable from a source file: relative ones followed, `import type` and
 * `export type` left out (the compiler erases them). Returns every file reached and every bare specifier.
 */
function runtimeImports(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>()
  const packages = new Set<string>()
  const visit = (file: string) => {
    if (files.has(file)) return
    files.add(file)
    const text = readFileSync(file, 'utf8')
    for (const m of text.matchAll(/^\s*(?:import|export)\s+(?!type\b)(?:[^'"]*?\s+from\s+)?['"]([^'"]+)['"]/gm)) {
      const spec = m[1]
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')))
      else packages.add(spec)
    }
  }
  visit(entry)
  return { files: [...files], packages: [...packages] }
}

describe('the worker SDK at run time', () => {
  const { files, packages } = runtimeImports(join(import.meta.dirname, 'index.ts'))

  it('loads node built-ins only: no package (TypeBox alone added about 240 ms to every worker cold start)', () => {
    expect(files.length).toBeGreaterThan(2)
    expect(packages.filter((p) => !p.startsWith('node:'))).toEqual([])
  })

  it('stays inside src/worker, which is copied alone into worker images (dist/worker)', () => {
    expect(files.filter((f) => dirname(f) !== import.meta.dirname)).toEqual([])
  })

  it('batches results up to the limit the control plane takes', () => {
    expect(SDK_MAX_DONE_BATCH).toBe(MAX_DONE_BATCH)
  })
})
