import { Type } from 'typebox'

/** Largest container disk, GB (a sane bound: the spec gives none). */
const MAX_DISK_GB = 4096

/**
 * Text handed to a program's environment or command line: the OS passes C strings, so a NUL byte cannot
 * reach the program (the runtime refuses to start it). Refused at the API instead.
 */
export const NO_NUL_PATTERN = '^[^\\u0000]*$'
const ProgramText = (options: { description?: string } = {}) => Type.String({ pattern: NO_NUL_PATTERN, ...options })

/** Environment variables: names and values without NUL bytes. */
const EnvInput = Type.Record(Type.String(), ProgramText(), { propertyNames: { pattern: NO_NUL_PATTERN } })

/** `<port>/<protocol>`, e.g. `8888/http`. */
export const PortSpec = Type.String({ pattern: '^\\d{1,5}/(http|tcp|udp)$' })

/** Container settings shared by templates, pods and endpoints (request side; every field optional). */
export const ContainerSettingsInput = {
  image: Type.Optional(Type.String({ minLength: 1 })),
  args: Type.Optional(
    ProgramText({
      description:
        'the container command as one raw string: a shell string (CMD) or a JSON object string {"entrypoint": [...], "cmd": [...]}; "" clears',
    }),
  ),
  cmd: Type.Optional(Type.Array(ProgramText(), { description: 'CMD in exec form; [] clears' })),
  entrypoint: Type.Optional(Type.Array(ProgramText(), { description: 'ENTRYPOINT in exec form; [] clears' })),
  disk: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_DISK_GB, description: 'container disk, GB' })),
  env: Type.Optional(EnvInput),
  ports: Type.Optional(Type.Array(PortSpec)),
  registry: Type.Optional(
    Type.Union([Type.String({ minLength: 1 }), Type.Null()], { description: 'container registry credential id' }),
  ),
}

/** Container settings as returned: every key present. */
export const ContainerSettings = {
  image: Type.String(),
  args: Type.String({ description: 'as stored; "" when unset' }),
  cmd: Type.Array(Type.String()),
  entrypoint: Type.Array(Type.String()),
  disk: Type.Integer(),
  env: Type.Record(Type.String(), Type.String()),
  ports: Type.Array(Type.String()),
  registry: Type.Union([Type.String(), Type.Null()]),
}
