import { Option, type Command } from 'commander'
import type { CreateTemplate, Template, UpdateTemplate } from '../../contract/template.js'
import {
  clientCommand,
  clientFor,
  collectEnv,
  intOption,
  readJsonObject,
  type ClientOptions,
} from '../clientCommand.js'
import { print, type Column } from '../output.js'

const columns: Column<Template>[] = [
  { header: 'id', value: (t) => t.id },
  { header: 'name', value: (t) => t.name },
  { header: 'image', value: (t) => t.image },
  { header: 'serverless', value: (t) => t.serverless },
  { header: 'public', value: (t) => t.public },
  { header: 'category', value: (t) => t.category },
  { header: 'disk', value: (t) => t.disk },
]

interface TemplateFlags extends ClientOptions {
  body?: string
  name?: string
  image?: string
  args?: string
  env?: Record<string, string>
  disk?: number
  serverless?: boolean
  public?: boolean
  category?: 'CPU' | 'NVIDIA' | 'AMD'
}

function withTemplateFlags(cmd: Command): Command {
  return cmd
    .option('--body <json>', 'the request body as JSON, @file or - (stdin); the flags below override its fields')
    .option('--name <name>', 'template name')
    .option('--image <image>', 'container image')
    .option('--args <command>', 'the command as one string')
    .option('--env <KEY=VALUE>', 'environment variable (repeatable)', collectEnv)
    .option('--disk <gb>', 'container disk, GB', intOption)
    .option('--serverless', 'usable by serverless endpoints (not pods)')
    .option('--public', 'readable by every account')
    .addOption(new Option('--category <category>', 'hardware category').choices(['CPU', 'NVIDIA', 'AMD']))
}

function bodyOf(opts: TemplateFlags): Record<string, unknown> {
  const body: Record<string, unknown> = opts.body ? readJsonObject(opts.body, '--body') : {}
  const fields: Record<string, unknown> = {
    name: opts.name,
    image: opts.image,
    args: opts.args,
    disk: opts.disk,
    serverless: opts.serverless,
    public: opts.public,
    category: opts.category,
  }
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) body[k] = v
  if (opts.env) body.env = { ...((body.env as object | undefined) ?? {}), ...opts.env }
  return body
}

/** `hangar templates`: your templates and the public catalog. */
export function registerTemplates(program: Command): void {
  const group = program.command('templates').description('templates: yours, and the official and community catalog')
  clientCommand(group, 'list', 'list your templates, or a catalog with --catalog')
    .addOption(
      new Option('--catalog <source>', 'list a catalog instead').choices(['official', 'community', 'verified']),
    )
    .action(async (opts: ClientOptions & { catalog?: 'official' | 'community' | 'verified' }) => {
      const api = clientFor(opts)
      const list = opts.catalog ? await api.catalogTemplates(opts.catalog) : await api.listTemplates()
      print(opts, list, { rows: list, columns })
    })
  clientCommand(group, 'get <id>', 'show a template (yours, public or official)').action(
    async (id: string, opts: ClientOptions) => {
      print(opts, await clientFor(opts).getTemplate(id))
    },
  )
  withTemplateFlags(clientCommand(group, 'create', 'create a template (name and image required)')).action(
    async (opts: TemplateFlags) => {
      print(opts, await clientFor(opts).createTemplate(bodyOf(opts) as CreateTemplate))
    },
  )
  withTemplateFlags(
    clientCommand(group, 'update <id>', 'change a template (endpoints made from it keep their copy)'),
  ).action(async (id: string, opts: TemplateFlags) => {
    print(opts, await clientFor(opts).updateTemplate(id, bodyOf(opts) as UpdateTemplate))
  })
  clientCommand(group, 'delete <id>', 'delete a template').action(async (id: string, opts: ClientOptions) => {
    await clientFor(opts).deleteTemplate(id)
    print(opts, { deleted: id }, () => `deleted ${id}`)
  })
}
