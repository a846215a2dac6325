import { Type, type Static } from 'typebox'
import { Closed, CudaVersion, DateTime, Id } from './common.js'
import { ContainerSettings, ContainerSettingsInput } from './container.js'

/** Upper bounds of an endpoint's numbers: generous for any real fleet, far below where arithmetic breaks. */
const MAX_GPUS_PER_WORKER = 128
const MAX_WORKERS = 1000

export const EndpointType = Type.Enum(['QUEUE', 'LOAD_BALANCER'])
export type EndpointType = Static<typeof EndpointType>

export const Flashboot = Type.Enum(['OFF', 'FLASHBOOT', 'PRIORITY_FLASHBOOT'])
export type Flashboot = Static<typeof Flashboot>

const QueueDelayScaling = Closed({
  type: Type.Literal('QUEUE_DELAY'),
  queueDelay: Type.Number({
    minimum: 0.5,
    maximum: 3600,
    description: 'seconds a job may wait before workers are added',
  }),
})
const RequestCountScaling = Closed({
  type: Type.Literal('REQUEST_COUNT'),
  requestCount: Type.Integer({ minimum: 1, maximum: 10_000, description: 'in-flight requests per worker' }),
})

/** The scaler, discriminated on `type`; Ajv validates only the branch `type` names, so errors stay precise. */
export const Scaling = Type.Unsafe<Static<typeof QueueDelayScaling> | Static<typeof RequestCountScaling>>({
  type: 'object',
  oneOf: [QueueDelayScaling, RequestCountScaling],
  discriminator: { propertyName: 'type' },
  required: ['type'],
})
export type Scaling = Static<typeof Scaling>

/** Response form of `gpu`: every constraint present, `[]`/null meaning "no limit". */
export const GpuConfig = Type.Object({
  pools: Type.Array(Type.String()),
  count: Type.Integer(),
  allowedCudaVersions: Type.Array(Type.String(), { description: '[] = any' }),
  minCudaVersion: Type.Union([Type.String(), Type.Null()], { description: 'null = no floor' }),
  // Always returned (`[]` = the whole pools) so clients never have to tell "absent" from "none".
  excludedTypes: Type.Array(Type.String(), { description: 'GPU type ids subtracted from the pools; [] = none' }),
})
export type GpuConfig = Static<typeof GpuConfig>

export const GpuCreate = Closed({
  pools: Type.Array(Type.String({ minLength: 1 }), {
    minItems: 1,
    description: 'serverless pool ids (the pool field of the GPU catalog)',
  }),
  excludedTypes: Type.Optional(
    Type.Array(Type.String(), {
      uniqueItems: true,
      description: 'GPU type ids subtracted from the pools; trimmed, non-empty, not starting with "-"',
    }),
  ),
  count: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_GPUS_PER_WORKER, description: 'GPUs per worker, default 1' }),
  ),
  allowedCudaVersions: Type.Optional(Type.Array(CudaVersion)),
  minCudaVersion: Type.Optional(CudaVersion),
})
export type GpuCreate = Static<typeof GpuCreate>

/**
 * PATCH form: every field optional; `[]` / `""` clear the CUDA limits. `pools` and `excludedTypes` are one
 * selection: `pools` alone clears the exclusions, `excludedTypes` is accepted only together with `pools`.
 */
export const GpuUpdate = Closed({
  pools: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
  excludedTypes: Type.Optional(
    Type.Array(Type.String(), { uniqueItems: true, description: 'only together with pools' }),
  ),
  count: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_GPUS_PER_WORKER })),
  allowedCudaVersions: Type.Optional(Type.Array(CudaVersion)),
  // One pattern rather than a union with '' so a malformed value gets one precise error line.
  minCudaVersion: Type.Optional(
    Type.String({ pattern: '^(\\d+\\.\\d+)?$', description: '<major>.<minor>; "" clears the floor' }),
  ),
})
export type GpuUpdate = Static<typeof GpuUpdate>

export const CpuCreate = Closed({
  id: Type.String({ minLength: 1, description: 'CPU flavor id from the catalog' }),
  vcpuCount: Type.Integer({
    minimum: 2,
    maximum: 1024,
    'x-powerOfTwo': true,
    description: 'a power of two valid for the flavor',
  }),
})
export type CpuCreate = Static<typeof CpuCreate>

export const CpuConfig = Type.Object({
  id: Type.String(),
  vcpuCount: Type.Integer(),
  memory: Type.Integer({ minimum: 1, description: 'GB, derived from the flavor' }),
})
export type CpuConfig = Static<typeof CpuConfig>

export const WorkersInput = Closed({
  min: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WORKERS })),
  max: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WORKERS })),
  idleTimeout: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600, description: 'seconds' })),
})

/** Response form; `idleTimeout` is omitted for a QUEUE endpoint scaling on REQUEST_COUNT. */
export const Workers = Type.Object({
  min: Type.Integer(),
  max: Type.Integer(),
  idleTimeout: Type.Optional(Type.Integer()),
})
export type Workers = Static<typeof Workers>

// The job-id URLs carry a literal `{job_id}` placeholder, which makes them RFC 6570 URI templates rather
// than URIs (a `uri` format would reject the braces).
const JobUrl = (suffix: string) => Type.String({ format: 'uri-template', description: `ends with /${suffix}/{job_id}` })

export const QueueRequestUrls = Type.Object({
  run: Type.String({ format: 'uri' }),
  runSync: Type.String({ format: 'uri' }),
  status: JobUrl('status'),
  stream: JobUrl('stream'),
  cancel: JobUrl('cancel'),
  retry: JobUrl('retry'),
  purgeQueue: Type.String({ format: 'uri' }),
  health: Type.String({ format: 'uri' }),
})
/** `base` is `{public url}/lb/{id}`; `health` is base + the endpoint's HEALTH_CHECK_PATH (default /ping). */
export const LoadBalancerRequestUrls = Type.Object({
  base: Type.String({ format: 'uri' }),
  health: Type.String({ format: 'uri' }),
})

const CreateCommon = {
  name: Type.String({ minLength: 1 }),
  templateId: Type.Optional(Type.String({ minLength: 1 })),
  ...ContainerSettingsInput,
  gpu: Type.Optional(GpuCreate),
  cpu: Type.Optional(Type.Array(CpuCreate, { minItems: 1, uniqueItems: true })),
  workers: Type.Optional(WorkersInput),
  dataCenterIds: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true })),
  networkVolumes: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true })),
  flashboot: Type.Optional(Flashboot),
  timeout: Type.Optional(
    Type.Integer({
      minimum: 1000,
      maximum: 604_800_000,
      description: 'per-request execution timeout, ms; default 300000',
    }),
  ),
}

export const CreateEndpoint = Closed({
  ...CreateCommon,
  type: EndpointType,
  scaling: Scaling,
})
export type CreateEndpoint = Static<typeof CreateEndpoint>

export const UpdateEndpoint = Closed({
  ...CreateCommon,
  name: Type.Optional(Type.String({ minLength: 1 })),
  gpu: Type.Optional(GpuUpdate),
  scaling: Type.Optional(Scaling),
})
export type UpdateEndpoint = Static<typeof UpdateEndpoint>

export const Endpoint = Type.Object({
  id: Id,
  name: Type.String(),
  type: EndpointType,
  requestUrls: Type.Union([QueueRequestUrls, LoadBalancerRequestUrls]),
  ...ContainerSettings,
  gpu: Type.Optional(Type.Union([GpuConfig, Type.Null()], { description: 'GPU endpoints; null for CPU endpoints' })),
  cpu: Type.Optional(Type.Array(CpuConfig, { description: 'CPU endpoints only, in submitted order' })),
  workers: Workers,
  scaling: Scaling,
  dataCenterIds: Type.Array(Type.String()),
  networkVolumes: Type.Array(Type.String()),
  timeout: Type.Integer(),
  flashboot: Flashboot,
  createdAt: DateTime,
})
export type Endpoint = Static<typeof Endpoint>

const WebhookSecret = Type.String({
  pattern: '^whsec_[A-Za-z0-9+/=]+$',
  description:
    "Hangar extension: the secret that signs this endpoint's job webhooks (Standard Webhooks). Shown only here, once; rotate it with POST /v2/serverless/{id}/webhook-secret/rotate.",
})

/** The create response: the endpoint, plus its webhook signing secret (shown this once). */
export const CreatedEndpoint = Type.Object({ ...Endpoint.properties, webhookSecret: WebhookSecret })
export type CreatedEndpoint = Static<typeof CreatedEndpoint>

/** The answer to a rotation of an endpoint's webhook secret. */
export const RotatedWebhookSecret = Type.Object({
  webhookSecret: WebhookSecret,
  previousSecretExpiresAt: Type.String({
    format: 'date-time',
    description: 'until then the previous secret signs too (a second signature)',
  }),
})
export type RotatedWebhookSecret = Static<typeof RotatedWebhookSecret>

export const EndpointList = Type.Object({ endpoints: Type.Array(Endpoint) })
export type EndpointList = Static<typeof EndpointList>

/** One changed field of a release; `old` is null on the release a create makes. */
export const ReleaseDiff = Type.Object({
  field: Type.String({ description: 'dotted path, e.g. workers.max' }),
  old: Type.Unknown(),
  new: Type.Unknown(),
})

/** A version of what an endpoint's workers run, made by the create and by each PATCH that changes it. */
export const Release = Type.Object({
  id: Id,
  version: Type.Union([Type.Integer(), Type.Null()]),
  source: Type.Enum(['GIT_BUILD', 'MANUAL']),
  buildId: Type.Union([Type.String(), Type.Null()]),
  createdByUserId: Type.Union([Type.String(), Type.Null()]),
  createdAt: DateTime,
  workerCount: Type.Integer(),
  diff: Type.Array(ReleaseDiff),
})
export type Release = Static<typeof Release>

/** Releases newest first, with how far the newest has rolled out to the workers. */
export const ReleaseList = Type.Object({
  endpointVersion: Type.Union([Type.Integer(), Type.Null()]),
  rollout: Type.Object({
    inProgress: Type.Boolean(),
    workersOnLatest: Type.Integer(),
    workersTotal: Type.Integer(),
    percentOnLatest: Type.Number({ minimum: 0, maximum: 100 }),
  }),
  releases: Type.Array(Release),
})
export type ReleaseList = Static<typeof ReleaseList>
