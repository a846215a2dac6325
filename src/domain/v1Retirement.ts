/**
 * API version 1 was retired on 15 November 2026 (the spec's Versioning section). Its paths answer 410 Gone
 * naming their v2 successor and the shape changes that matter for it, so that a client still calling them
 * learns what to change instead of getting a bare 404. Pure data and one lookup; the routes live in
 * api/routes/retiredV1.ts.
 */

/** RFC 8594 `Sunset` of every v1 path. */
export const V1_SUNSET = 'Sun, 15 Nov 2026 00:00:00 GMT'

/** A v1 path pattern (`:id` for the generic id) and what replaces it. */
export interface RetiredV1Path {
  /** The v1 path, without the optional `/v1` prefix. */
  path: string
  /** v2 path with `:id` where the v1 path had one; null when v2 has no equivalent. */
  successor: string | null
  /** The v2 method per v1 method, when it differs (v1 POST update paths are PATCH in v2). */
  methods?: Partial<Record<string, string>>
  /** The shape changes a caller of this path must make, or why there is no successor. */
  changes: string
}

const LIST = 'list responses are objects keyed by resource name instead of bare arrays'
const ERRORS = 'errors are application/problem+json problems instead of a message object'
const ACTION = (a: string) => `send {"action": "${a}"} to POST /v2/pods/{id}/action; ${ERRORS}`
const POD_BODY = 'create and update bodies are nested (`gpu` or `cpu`, `mounts`)'
const ENDPOINT_BODY =
  'create and update bodies are nested: v1 flat workersMin, workersMax, idleTimeout move under `workers`, scalerType under `scaling`; `templateId` is optional (direct container settings are allowed)'
const TEMPLATE_BODY =
  'template fields are renamed: imageName is `image`, containerDiskInGb is `disk`, isPublic is `public`, containerRegistryAuthId is the nested `registry`'
const VOLUME_BODY = '`dataCenterId` is `dataCenter` and `type` is added'
const UPDATE = { POST: 'PATCH', PUT: 'PATCH' }

/** Every v1 path of the spec's mapping. */
export const RETIRED_V1_PATHS: readonly RetiredV1Path[] = [
  { path: '/pods', successor: '/v2/pods', changes: `${POD_BODY}; ${LIST}; ${ERRORS}` },
  {
    path: '/pods/:id',
    successor: '/v2/pods/:id',
    methods: UPDATE,
    changes: `in-place updates are PATCH; ${POD_BODY}; ${ERRORS}`,
  },
  {
    path: '/pods/:id/update',
    successor: '/v2/pods/:id',
    methods: { POST: 'PATCH', GET: 'PATCH' },
    changes: `in-place updates are PATCH /v2/pods/{id}; ${POD_BODY}; ${ERRORS}`,
  },
  { path: '/pods/:id/start', successor: '/v2/pods/:id/action', methods: { GET: 'POST' }, changes: ACTION('start') },
  { path: '/pods/:id/stop', successor: '/v2/pods/:id/action', methods: { GET: 'POST' }, changes: ACTION('stop') },
  { path: '/pods/:id/restart', successor: '/v2/pods/:id/action', methods: { GET: 'POST' }, changes: ACTION('restart') },
  {
    path: '/pods/:id/reset',
    successor: null,
    changes:
      'v1 reset has no v2 equivalent; stop and start the pod with POST /v2/pods/{id}/action, or delete it and create a new one',
  },
  { path: '/endpoints', successor: '/v2/serverless', changes: `${ENDPOINT_BODY}; ${LIST}; ${ERRORS}` },
  {
    path: '/endpoints/:id',
    successor: '/v2/serverless/:id',
    methods: UPDATE,
    changes: `in-place updates are PATCH; ${ENDPOINT_BODY}; ${ERRORS}`,
  },
  {
    path: '/endpoints/:id/update',
    successor: '/v2/serverless/:id',
    methods: { POST: 'PATCH', GET: 'PATCH' },
    changes: `in-place updates are PATCH /v2/serverless/{id}; ${ENDPOINT_BODY}; ${ERRORS}`,
  },
  { path: '/templates', successor: '/v2/templates', changes: `${TEMPLATE_BODY}; ${LIST}; ${ERRORS}` },
  { path: '/templates/:id', successor: '/v2/templates/:id', methods: UPDATE, changes: `${TEMPLATE_BODY}; ${ERRORS}` },
  {
    path: '/templates/:id/update',
    successor: '/v2/templates/:id',
    methods: { POST: 'PATCH', GET: 'PATCH' },
    changes: `in-place updates are PATCH /v2/templates/{id}; ${TEMPLATE_BODY}; ${ERRORS}`,
  },
  { path: '/networkvolumes', successor: '/v2/network-volumes', changes: `${VOLUME_BODY}; ${LIST}; ${ERRORS}` },
  {
    path: '/networkvolumes/:id',
    successor: '/v2/network-volumes/:id',
    methods: UPDATE,
    changes: `${VOLUME_BODY}; ${ERRORS}`,
  },
  {
    path: '/networkvolumes/:id/update',
    successor: '/v2/network-volumes/:id',
    methods: { POST: 'PATCH', GET: 'PATCH' },
    changes: `in-place updates are PATCH /v2/network-volumes/{id}; ${VOLUME_BODY}; ${ERRORS}`,
  },
  {
    path: '/containerregistryauth',
    successor: '/v2/registries',
    changes: `${LIST} (\`{"registries": [...]}\`); ${ERRORS}`,
  },
  { path: '/containerregistryauth/:id', successor: '/v2/registries/:id', changes: ERRORS },
  { path: '/billing/pods', successor: '/v2/billing/pods', changes: `${LIST}; ${ERRORS}` },
  {
    path: '/billing/endpoints',
    successor: '/v2/billing/serverless',
    changes: `serverless billing is /v2/billing/serverless (/v2/billing/endpoints is public-endpoint billing); ${LIST}; ${ERRORS}`,
  },
  { path: '/billing/networkvolumes', successor: '/v2/billing/network-volumes', changes: `${LIST}; ${ERRORS}` },
]

/** What a retired v1 request is told: the v2 method and path (id filled in), and the problem's detail. */
export interface V1Answer {
  /** The v2 path with the request's id, or null when there is none. */
  successor: string | null
  detail: string
}

/** The answer to `method` on the retired v1 path `entry` with path parameter `id` (when it has one). */
export function retiredV1Answer(entry: RetiredV1Path, method: string, id: string | undefined): V1Answer {
  const retired = 'API v1 was retired on 15 November 2026'
  if (entry.successor === null)
    return { successor: null, detail: `${retired}: ${method} ${v1Shown(entry.path, id)}: ${entry.changes}` }
  const successor = id === undefined ? entry.successor : entry.successor.replace(':id', encodeURIComponent(id))
  const v2Method = entry.methods?.[method] ?? method
  return {
    successor,
    detail: `${retired}: ${method} ${v1Shown(entry.path, id)} is now ${v2Method} ${successor}; ${entry.changes}`,
  }
}

function v1Shown(path: string, id: string | undefined): string {
  return id === undefined ? path : path.replace(':id', id)
}
