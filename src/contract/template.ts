import { Type, type Static } from 'typebox'
import { Closed, CudaVersion, Id } from './common.js'
import { ContainerSettings, ContainerSettingsInput } from './container.js'

export const TemplateCategory = Type.Enum(['CPU', 'NVIDIA', 'AMD'])

const PersistentMount = Closed({ size: Type.Integer({ minimum: 10, description: 'GB' }), path: Type.String({ minLength: 1, pattern: '^/' }) })
/** Templates carry only a persistent mount (network volumes are attached per pod). */
export const TemplateMounts = Closed({ persistent: Type.Optional(PersistentMount) })

export const Template = Type.Object({
  id: Id,
  name: Type.String(),
  ...ContainerSettings,
  mounts: Type.Object({ persistent: Type.Optional(Type.Object({ size: Type.Integer(), path: Type.String() })) }),
  serverless: Type.Boolean(),
  public: Type.Boolean(),
  category: TemplateCategory,
  startSsh: Type.Boolean(),
  startJupyter: Type.Boolean(),
  allowedCudaVersions: Type.Array(Type.String(), { description: '[] = any' }),
})
export type Template = Static<typeof Template>

export const CreateTemplate = Closed({
  name: Type.String({ minLength: 1 }),
  ...ContainerSettingsInput,
  image: Type.String({ minLength: 1 }),
  mounts: Type.Optional(TemplateMounts),
  serverless: Type.Optional(Type.Boolean()),
  public: Type.Optional(Type.Boolean()),
  category: Type.Optional(TemplateCategory),
  startSsh: Type.Optional(Type.Boolean()),
  startJupyter: Type.Optional(Type.Boolean()),
  allowedCudaVersions: Type.Optional(Type.Array(CudaVersion, { uniqueItems: true })),
})
export type CreateTemplate = Static<typeof CreateTemplate>

export const UpdateTemplate = Closed({
  name: Type.Optional(Type.String({ minLength: 1 })),
  ...ContainerSettingsInput,
  mounts: Type.Optional(TemplateMounts),
  serverless: Type.Optional(Type.Boolean()),
  public: Type.Optional(Type.Boolean()),
  category: Type.Optional(TemplateCategory),
  startSsh: Type.Optional(Type.Boolean()),
  startJupyter: Type.Optional(Type.Boolean()),
  allowedCudaVersions: Type.Optional(Type.Array(CudaVersion, { uniqueItems: true })),
})
export type UpdateTemplate = Static<typeof UpdateTemplate>

export const TemplateList = Type.Object({ templates: Type.Array(Template) })
export const TemplateSource = Type.Object({ source: Type.Optional(Type.Enum(['official', 'verified', 'community'], { default: 'official' })) })
