import { Type, type Static } from 'typebox'
import { Closed, CudaVersion, Id } from './common.js'
import { ContainerSettings, ContainerSettingsInput } from './container.js'

export const TemplateCategory = Type.Enum(['CPU', 'NVIDIA', 'AMD'])
export type TemplateCategory = Static<typeof TemplateCategory>

const PersistentMount = Closed({
  size: Type.Integer({ minimum: 10, maximum: 4096, description: 'GB' }),
  path: Type.String({ minLength: 1, pattern: '^/' }),
})
/** Templates carry only a persistent mount (network volumes are attached per pod). */
export const TemplateMounts = Closed({ persistent: Type.Optional(PersistentMount) })

/** A template as returned: every key present. */
export const Template = Type.Object({
  id: Id,
  name: Type.String(),
  ...ContainerSettings,
  registry: Type.Union([Type.String(), Type.Null()], {
    description: 'container registry credential id; null unless the caller owns the template',
  }),
  mounts: Type.Object(
    { persistent: Type.Optional(Type.Object({ size: Type.Integer(), path: Type.String() })) },
    { description: '{} when there is none' },
  ),
  serverless: Type.Boolean({ description: 'usable by serverless endpoints (true) or by pods (false)' }),
  public: Type.Boolean({ description: 'readable by every account and listed under source=community' }),
  category: TemplateCategory,
  startSsh: Type.Boolean({ description: 'pods only' }),
  startJupyter: Type.Boolean({ description: 'pods only' }),
  allowedCudaVersions: Type.Array(Type.String(), { description: '[] = any' }),
})
export type Template = Static<typeof Template>

const TemplateFields = {
  ...ContainerSettingsInput,
  mounts: Type.Optional(TemplateMounts),
  serverless: Type.Optional(Type.Boolean({ description: 'default false' })),
  public: Type.Optional(Type.Boolean({ description: 'default false' })),
  category: Type.Optional(TemplateCategory),
  startSsh: Type.Optional(Type.Boolean({ description: 'default true' })),
  startJupyter: Type.Optional(Type.Boolean({ description: 'default true' })),
  allowedCudaVersions: Type.Optional(
    Type.Array(CudaVersion, { uniqueItems: true, description: '[] or omitted = any' }),
  ),
}

/** Create body: `name` and `image` required; defaults: disk 20, category NVIDIA, startSsh/startJupyter true. */
export const CreateTemplate = Closed({
  name: Type.String({ minLength: 1 }),
  ...TemplateFields,
  image: Type.String({ minLength: 1 }),
})
export type CreateTemplate = Static<typeof CreateTemplate>

/** PATCH body: every field optional; `allowedCudaVersions: []` clears; `mounts: {}` leaves the mount unchanged. */
export const UpdateTemplate = Closed({
  name: Type.Optional(Type.String({ minLength: 1 })),
  ...TemplateFields,
})
export type UpdateTemplate = Static<typeof UpdateTemplate>

export const TemplateList = Type.Object({ templates: Type.Array(Template) })
export type TemplateList = Static<typeof TemplateList>

export const TemplateSource = Type.Object({
  source: Type.Optional(
    Type.Enum(['official', 'verified', 'community'], {
      default: 'official',
      description:
        'official: shipped with Hangar; verified: always empty; community: public templates of every account',
    }),
  ),
})
export type TemplateSource = Static<typeof TemplateSource>
