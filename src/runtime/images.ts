import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Type, type Static } from 'typebox'

export const ImageMapping = Type.Object(
  {
    command: Type.Array(Type.String(), { minItems: 1, description: 'argv run for the image (its ENTRYPOINT + CMD)' }),
    env: Type.Optional(
      Type.Record(Type.String(), Type.String(), { description: 'Environment variables added for the command.' }),
    ),
  },
  {
    additionalProperties: false,
    description: 'What running an image means on a runtime without containers: a local command and extra env.',
  },
)
export type ImageMapping = Static<typeof ImageMapping>

export const ImagesConfig = Type.Record(Type.String(), ImageMapping, {
  default: {},
  description:
    "Image reference -> local command, for running endpoints' images as local processes; adds to (and may override) the built-in sample workers (see docs/writing-workers.md).",
})
export type ImagesConfig = Static<typeof ImagesConfig>

/** The sample workers shipped in dist/sampleWorkers, used by the official templates. */
export const BUILTIN_WORKERS = ['echo', 'sleep', 'stream', 'fail', 'openai', 'http', 'pod', 'cluster'] as const

// src/runtime/ and dist/runtime/ both sit two levels below the package root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** `hangar/<name>:latest` -> `node <package root>/dist/sampleWorkers/<name>.js` for each sample worker. */
export function builtinImages(): ImagesConfig {
  return Object.fromEntries(
    BUILTIN_WORKERS.map((name) => [
      `hangar/${name}:latest`,
      { command: [process.execPath, join(PACKAGE_ROOT, 'dist', 'sampleWorkers', `${name}.js`)] },
    ]),
  )
}

/** The mapping of an image reference (a missing tag means `:latest`), configured ones first. */
export function resolveImage(image: string, configured: ImagesConfig): ImageMapping | undefined {
  const all = { ...builtinImages(), ...configured }
  // The engine's name of a sample (`localhost/hangar/echo:<version>`, see docker/sampleImages.ts) is the same program.
  const sample = /^localhost\/hangar\/([a-z]+):[\w.-]+$/.exec(image)
  const builtin =
    sample && (BUILTIN_WORKERS as readonly string[]).includes(sample[1]) ? `hangar/${sample[1]}:latest` : null
  return all[image] ?? all[withTag(image)] ?? (builtin ? all[builtin] : undefined)
}

function withTag(image: string): string {
  const lastSlash = image.lastIndexOf('/')
  return image.slice(lastSlash + 1).includes(':') || image.includes('@') ? image : `${image}:latest`
}
