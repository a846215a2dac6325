import type { Template } from '../../contract/template.js'
import { resolveCommand, type CommandInput, type ContainerCommand } from './containerCommand.js'
import { DomainError, type Violations } from '../errors.js'

/** Container disk of an endpoint created without a template and without `disk`, GB. */
export const DEFAULT_ENDPOINT_DISK_GB = 10

/** What the endpoint rules read from a template (R6); `registry` is null unless the caller owns it. */
export type TemplateView = Pick<
  Template,
  | 'id'
  | 'serverless'
  | 'image'
  | 'args'
  | 'cmd'
  | 'entrypoint'
  | 'disk'
  | 'ports'
  | 'env'
  | 'registry'
  | 'allowedCudaVersions'
>

/** The container settings an endpoint stores. */
export interface ContainerFields extends ContainerCommand {
  image: string
  disk: number
  env: Record<string, string>
  ports: string[]
  registry: string | null
}

/** The container settings a create or PATCH body may carry; omitted fields leave things as they are. */
export interface ContainerInput extends CommandInput {
  image?: string
  disk?: number
  env?: Record<string, string>
  ports?: string[]
  registry?: string | null
}

/**
 * R6 and R12: the container settings of a create (`current` null) or PATCH.
 *
 * A template, when given, is copied first (image, command, disk, ports, env, registry; never its pod-only
 * startSsh/startJupyter), replacing the current settings on a PATCH; the body's fields then win, except
 * `env`, which is merged over the template's per key with the body winning. Without a template a PATCH's
 * `env` replaces the whole map. The command follows `resolveCommand`: `args` replaces the command,
 * `cmd`/`entrypoint` alone replace their part, `""`/`[]` clear. `disk` defaults to the template's, else
 * DEFAULT_ENDPOINT_DISK_GB. Unreadable `args` and a missing `image` are 422; `args` disagreeing with
 * `cmd`/`entrypoint` is 400.
 */
export function resolveContainer(
  current: ContainerFields | null,
  template: TemplateView | null,
  body: ContainerInput,
  invalid: Violations,
  conflicts: Violations,
): ContainerFields {
  const base: ContainerFields | null = template ? fromTemplate(template) : current
  const image = body.image ?? base?.image
  if (image === undefined) invalid.add('image', 'is required unless templateId is set')
  let command: ContainerCommand = { args: '', cmd: [], entrypoint: [] }
  try {
    // Only the command goes in: resolveCommand copies what it is given when the body leaves the command alone.
    command = resolveCommand(body, base ? { args: base.args, cmd: base.cmd, entrypoint: base.entrypoint } : undefined)
  } catch (err) {
    if (!(err instanceof DomainError)) throw err
    const into = err.kind === 'bad_request' ? conflicts : invalid
    for (const line of err.errors ?? [err.detail]) into.items.push(line)
  }
  // The schema's pattern allows five digits; a port past 65535 would reach the runtime (and its relays) as given.
  for (const [i, p] of (body.ports ?? []).entries()) {
    const n = Number(p.split('/')[0])
    if (n < 1 || n > 65535) invalid.add(`ports[${i}]`, `${JSON.stringify(p)}: the port must be 1 to 65535`)
  }
  return {
    image: image ?? '',
    ...command,
    disk: body.disk ?? base?.disk ?? DEFAULT_ENDPOINT_DISK_GB,
    env: template ? { ...template.env, ...body.env } : { ...(body.env ?? current?.env ?? {}) },
    ports: [...(body.ports ?? base?.ports ?? [])],
    registry: body.registry !== undefined ? body.registry : (base?.registry ?? null),
  }
}

function fromTemplate(t: TemplateView): ContainerFields {
  return {
    image: t.image,
    args: t.args,
    cmd: [...t.cmd],
    entrypoint: [...t.entrypoint],
    disk: t.disk,
    env: { ...t.env },
    ports: [...t.ports],
    registry: t.registry,
  }
}
