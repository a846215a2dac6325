import { Type, type Static } from 'typebox'

export const LoadBalancerConfig = Type.Object(
  {
    domain: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9.-]+(:[0-9]+)?$',
        description:
          "Host-based addressing: with `lb.example.com`, requests to `{endpointId}.lb.example.com` (wildcard DNS to Hangar) reach that endpoint's workers with their path unchanged, and `requestUrls.base` uses that form. May carry a port (`lb.localhost:8080`). Without it, endpoints are served under `/lb/{id}`.",
      }),
    ),
    requestTimeoutMs: Type.Integer({
      minimum: 100,
      default: 330_000,
      description: 'A request whose worker sends no response headers within this long is answered 504 (5.5 minutes).',
    }),
    coldStartTimeoutMs: Type.Integer({
      minimum: 100,
      default: 120_000,
      description: 'How long a request waits for a ready worker (cold start, all busy) before a 503 with Retry-After.',
    }),
    maxBodyBytes: Type.Integer({
      minimum: 1,
      default: 30 * 1024 * 1024,
      description: 'Largest request body passed to a worker; larger ones are answered 413.',
    }),
    healthIntervalMs: Type.Integer({
      minimum: 10,
      default: 1_000,
      description: 'Health checks of ready workers run this often.',
    }),
    startingHealthIntervalMs: Type.Integer({
      minimum: 10,
      default: 100,
      description: 'Health checks of starting workers run this often, so a cold start is noticed quickly.',
    }),
    healthTimeoutMs: Type.Integer({
      minimum: 10,
      default: 2_000,
      description: 'A health check without an answer within this long counts as failed.',
    }),
    unhealthyAfter: Type.Integer({
      minimum: 1,
      default: 3,
      description: 'Consecutive failed health checks after which a worker is replaced (crash back-off).',
    }),
  },
  {
    additionalProperties: false,
    default: {},
    description: 'LOAD_BALANCER endpoints: host-based addressing, limits of proxied requests, health checks.',
  },
)
export type LoadBalancerConfig = Static<typeof LoadBalancerConfig>
