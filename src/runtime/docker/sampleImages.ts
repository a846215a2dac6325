import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type Docker from 'dockerode'
import { BUILTIN_WORKERS } from '../images.js'
import { messageOf, statusOf } from './engineErrors.js'

// src/runtime/docker/ and dist/runtime/docker/ both sit three levels below the package root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url))
const VERSION = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version
const DIGEST_LABEL = 'io.hangar.sample-digest'

export type SampleName = (typeof BUILTIN_WORKERS)[number]

/** The engine image of a sample worker: `localhost/hangar/echo:0.1.0` (the `localhost/` host is never pulled). */
export function sampleImageRef(name: SampleName | 'base'): string {
  return `localhost/hangar/${name}:${VERSION}`
}

/**
 * The sample a reference names on an engine: `hangar/echo`, `hangar/echo:latest` (the names the docs and the
 * process runtime use) or `localhost/hangar/echo:<version>`. `docker.io/hangar/echo` is a registry image, not ours.
 */
export function sampleOf(image: string): SampleName | null {
  const m = /^(?:localhost\/)?hangar\/([a-z]+)(?::([\w.-]+))?$/.exec(image)
  if (!m) return null
  const name = m[1] as SampleName
  if (!BUILTIN_WORKERS.includes(name)) return null
  const local = image.startsWith('localhost/')
  if (local ? m[2] !== VERSION : m[2] !== undefined && m[2] !== 'latest') return null
  return name
}

let cached: { files: Array<{ from: string; to: string }>; digest: string } | undefined

/** Files of this build the images carry, and what makes them differ (a rebuilt dist, another node); read once per process. */
function sources(): { files: Array<{ from: string; to: string }>; digest: string } {
  cached ??= readSources()
  return cached
}

function readSources(): { files: Array<{ from: string; to: string }>; digest: string } {
  const files: Array<{ from: string; to: string }> = []
  const walk = (from: string, to: string) => {
    for (const entry of readdirSync(from).sort()) {
      const f = join(from, entry)
      if (statSync(f).isDirectory()) walk(f, join(to, entry))
      else if (entry.endsWith('.js')) files.push({ from: f, to: join(to, entry) })
    }
  }
  const dist = join(PACKAGE_ROOT, 'dist')
  if (!existsSync(join(dist, 'sampleWorkers', 'echo.js')))
    throw new Error(
      `the sample workers are not built (${join(dist, 'sampleWorkers')} is missing): run \`npm run build\``,
    )
  walk(join(dist, 'worker'), 'hangar/worker')
  // In the image they keep the path /hangar/workers (the images' CMD and the templates name it).
  walk(join(dist, 'sampleWorkers'), 'hangar/workers')
  files.push({ from: join(dist, 'contract', 'workerLimits.js'), to: 'hangar/contract/workerLimits.js' })
  // hangar/http's WebSocket server.
  const ws = dirname(createRequire(import.meta.url).resolve('ws/package.json'))
  files.push({ from: join(ws, 'package.json'), to: 'hangar/node_modules/ws/package.json' })
  for (const entry of ['index.js', 'wrapper.mjs'])
    if (existsSync(join(ws, entry))) files.push({ from: join(ws, entry), to: `hangar/node_modules/ws/${entry}` })
  walk(join(ws, 'lib'), 'hangar/node_modules/ws/lib')
  const hash = createHash('sha256').update(`${VERSION} ${process.version} ${process.execPath}\n`)
  for (const f of files) hash.update(`${f.to}\n`).update(readFileSync(f.from))
  return { files, digest: hash.digest('hex').slice(0, 16) }
}

/** The shared libraries node links (its loader included), from `ldd`, else from this process's own maps. */
function nodeLibraries(): string[] {
  let text: string
  try {
    text = execFileSync('ldd', [process.execPath], { encoding: 'utf8' })
  } catch {
    // No ldd (a minimal image): the libraries this process mapped say the same.
    text = readFileSync('/proc/self/maps', 'utf8')
      .split('\n')
      .filter((l) => /\/(lib|lib64|usr\/lib)\/.*\.so/.test(l))
      .join('\n')
  }
  return [...new Set(text.match(/\/[^\s()]+\.so[^\s()]*/g) ?? [])].filter((p) => existsSync(p))
}

/** Where each built image is on each engine (one build at a time per image and engine). */
const building = new WeakMap<Docker, Map<string, Promise<void>>>()

/**
 * Makes sure the engine has the sample image `name` of this build, building it (and its base) through the
 * Engine API from what Hangar ships: this machine's node with its libraries, the worker SDK and the sample
 * programs. No registry is involved. An image of an older build (another digest) is built again.
 */
export async function ensureSampleImage(
  docker: Docker,
  name: SampleName,
  onBuild?: (image: string) => void,
): Promise<string> {
  const { files, digest } = sources()
  await once(docker, sampleImageRef('base'), () =>
    buildIfStale(docker, sampleImageRef('base'), digest, onBuild, (dir) => baseContext(dir, files, digest)),
  )
  const ref = sampleImageRef(name)
  await once(docker, ref, () =>
    buildIfStale(docker, ref, digest, onBuild, (dir) =>
      writeFileSync(
        join(dir, 'Dockerfile'),
        `FROM ${sampleImageRef('base')}\nLABEL ${DIGEST_LABEL}=${digest}\nCMD ["node", "/hangar/workers/${name}.js"]\n`,
      ),
    ),
  )
  return ref
}

/** Builds every sample image; resolves with their names. */
export async function ensureSampleImages(docker: Docker, onBuild?: (image: string) => void): Promise<string[]> {
  const out: string[] = []
  for (const name of BUILTIN_WORKERS) out.push(await ensureSampleImage(docker, name, onBuild))
  return out
}

async function once(docker: Docker, ref: string, fn: () => Promise<void>): Promise<void> {
  let m = building.get(docker)
  if (!m) building.set(docker, (m = new Map()))
  const running = m.get(ref)
  if (running) return running
  const p = fn().finally(() => m.delete(ref))
  m.set(ref, p)
  return p
}

async function buildIfStale(
  docker: Docker,
  ref: string,
  digest: string,
  onBuild: ((image: string) => void) | undefined,
  context: (dir: string) => void,
): Promise<void> {
  try {
    const info = await docker.getImage(ref).inspect()
    if (info.Config?.Labels?.[DIGEST_LABEL] === digest) return
  } catch (err) {
    if (statusOf(err) !== 404) throw new Error(`cannot inspect image ${ref}: ${messageOf(err)}`)
  }
  onBuild?.(ref)
  const dir = mkdtempSync(join(tmpdir(), 'hangar-image-'))
  try {
    context(dir)
    const stream = await docker.buildImage({ context: dir, src: readdirSync(dir) }, { t: ref, rm: true, forcerm: true })
    let failure: string | null = null
    await new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(
        stream,
        (err) => (err ? reject(err) : resolve()),
        (event: { error?: string; errorDetail?: { message?: string } }) => {
          if (event.error || event.errorDetail?.message) failure = event.errorDetail?.message ?? event.error ?? 'failed'
        },
      )
    }).catch((err: unknown) => {
      failure ??= messageOf(err)
    })
    if (failure) throw new Error(`cannot build ${ref}: ${failure}`)
  } catch (err) {
    throw new Error(
      (err as Error).message.startsWith('cannot build')
        ? (err as Error).message
        : `cannot build ${ref}: ${messageOf(err)}`,
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A root file system from scratch: node and its libraries, the SDK and the samples, the usual empty folders. */
function baseContext(dir: string, files: Array<{ from: string; to: string }>, digest: string): void {
  const root = join(dir, 'rootfs')
  for (const d of ['tmp', 'workspace', 'proc', 'sys', 'dev', 'etc', 'usr/bin'])
    mkdirSync(join(root, d), { recursive: true })
  writeFileSync(
    join(root, 'etc', 'passwd'),
    'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n',
  )
  writeFileSync(join(root, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n')
  copyFileSync(process.execPath, join(root, 'usr', 'bin', 'node'))
  for (const lib of nodeLibraries()) {
    mkdirSync(join(root, dirname(lib)), { recursive: true })
    copyFileSync(lib, join(root, lib))
  }
  for (const f of files) {
    mkdirSync(join(root, dirname(f.to)), { recursive: true })
    cpSync(f.from, join(root, f.to))
  }
  writeFileSync(join(root, 'hangar', 'package.json'), '{"type":"module"}\n')
  writeFileSync(
    join(dir, 'Dockerfile'),
    `FROM scratch\nCOPY rootfs/ /\nENV PATH=/usr/local/bin:/usr/bin:/bin\nWORKDIR /hangar\nLABEL ${DIGEST_LABEL}=${digest}\nCMD ["node", "/hangar/workers/echo.js"]\n`,
  )
}
