import { Type, type Static } from 'typebox'

/** Load-balancing endpoints: addressing, limits of proxied requests, health checks. */
export const LoadBalancerConfig = Type.Object(
  {
    /**
     * Host-based addressing: with `lb.example.com`, requests to `{endpointId}.lb.example.com` (wildcard DNS
     * to Hangar) reach that endpoint's workers with their path unchanged, and `requestUrls.base` uses that
     * form. May carry a port (`lb.localhost:8080`). Without it, endpoints are served under `/lb/{id}`.
     */
    domain: Type.Optional(Type.String({ pattern: '^[a-z0-9.-]+(:[0-9]+)?$' })),
    /** A request whose worker sends no response headers within this long is answered 504 (5.5 minutes). */
    requestTimeoutMs: Type.Integer({ minimum: 100, default: 330_000 }),
    /** How long a request waits for a ready worker (cold start, all busy) before a 503 with Retry-After. */
    coldStartTimeoutMs: Type.Integer({ minimum: 100, default: 120_000 }),
    /** Largest request body passed to a worker; larger ones are answered 413. */
    maxBodyBytes: Type.Integer({ minimum: 1, default: 30 * 1024 * 1024 }),
    /** Health checks of ready workers run this often. */
    healthIntervalMs: Type.Integer({ minimum: 10, default: 1_000 }),
    /** Health checks of starting workers run this often, so a cold start is noticed quickly. */
    startingHealthIntervalMs: Type.Integer({ minimum: 10, default: 100 }),
    /** A health check without an answer within this long counts as failed. */
    healthTimeoutMs: Type.Integer({ minimum: 10, default: 2_000 }),
    /** Consecutive failed health checks after which a worker is replaced (crash back-off). */
    unhealthyAfter: Type.Integer({ minimum: 1, default: 3 }),
  },
  { additionalProperties: false, default: {} },
)
export type LoadBalancerConfig = Static<typeof LoadBalancerConfig>
