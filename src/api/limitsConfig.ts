import { Type, type Static } from 'typebox'

const MiB = 1024 * 1024

export const LimitsConfig = Type.Object(
  {
    headersTimeoutMs: Type.Integer({
      minimum: 100,
      maximum: 600_000,
      default: 15_000,
      description:
        'A request whose headers have not all arrived this long after its connection opened (or its previous request ended) gets 408.',
    }),
    requestTimeoutMs: Type.Integer({
      minimum: 100,
      maximum: 3_600_000,
      default: 120_000,
      description:
        'A request not received whole (headers and body) within this gets 408: at 20 MB, a client slower than about 170 KB/s.',
    }),
    maxJsonDepth: Type.Integer({
      minimum: 8,
      maximum: 1_000,
      default: 128,
      description:
        'Deepest nesting of arrays and objects accepted in a JSON body; deeper is 400 (checked before parsing).',
    }),
    bodyBytesInFlight: Type.Integer({
      minimum: 64 * MiB,
      maximum: 64 * 1024 * MiB,
      default: 512 * MiB,
      description:
        "Request bodies (declared Content-Length, or the route's body limit for chunked ones) held at once; a request that would pass it is answered 503 with Retry-After before its body is read. At least 64 MiB, the largest single body (a worker's result).",
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description:
      'What one client may cost the server: deadlines for receiving a request, how deep JSON may nest, and how many request-body bytes may be held at once. Long-polls and streams are not cut by the deadlines: they count only until the request (headers and body) has arrived.',
  },
)
export type LimitsConfig = Static<typeof LimitsConfig>
