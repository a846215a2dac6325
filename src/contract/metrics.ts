import { Type, type Static } from 'typebox'

/** The windows an endpoint's metrics can be read over, and the interval of their points. */
export const MetricsWindow = Type.Union([Type.Literal('hour'), Type.Literal('day'), Type.Literal('week')], {
  description: '`hour`: 1-minute points; `day`: 15-minute points; `week`: 1-hour points',
})
export type MetricsWindow = Static<typeof MetricsWindow>

export const MetricsQuery = Type.Object({ window: Type.Optional(MetricsWindow) })

const Points = Type.Array(Type.Number())
/** One value per point, null where nothing was measured. */
const MaybePoints = Type.Array(Type.Union([Type.Number(), Type.Null()]))
const Percentiles = Type.Object(
  { p50: MaybePoints, p95: MaybePoints, p99: MaybePoints },
  { description: 'Milliseconds, from fixed histogram bins (interpolated within a bin)' },
)

/** An endpoint's metrics over a window: one array entry per interval, aligned with `times`. */
export const EndpointMetrics = Type.Object({
  endpointId: Type.String(),
  window: MetricsWindow,
  intervalSeconds: Type.Integer(),
  /** Start of each interval, epoch milliseconds. */
  times: Points,
  jobs: Type.Object(
    { completed: Points, failed: Points, cancelled: Points, timedOut: Points },
    { description: 'Jobs that reached each final status in the interval' },
  ),
  executionMs: Percentiles,
  delayMs: Percentiles,
  coldStarts: Type.Object({ count: Points, durationMs: Percentiles }),
  workers: Type.Object(
    { running: Points, idle: Points, throttled: Points },
    { description: 'Average number of workers in each state over the interval' },
  ),
  queueDepth: Points,
  requests: Type.Object(
    {
      total: Points,
      status2xx: Points,
      status3xx: Points,
      status4xx: Points,
      status5xx: Points,
      latencyMs: Percentiles,
    },
    { description: 'Requests through the load balancer (LOAD_BALANCER endpoints), by status class' },
  ),
  totals: Type.Object({
    completed: Type.Integer(),
    failed: Type.Integer(),
    cancelled: Type.Integer(),
    timedOut: Type.Integer(),
    coldStarts: Type.Integer(),
    requests: Type.Integer(),
  }),
})
export type EndpointMetrics = Static<typeof EndpointMetrics>

/** The account at a glance. */
export const AccountOverview = Type.Object({
  /** Cost of the account's use since 00:00 UTC, in dollars (closed and still running use). */
  spendToday: Type.Number(),
  runningWorkers: Type.Integer(),
  runningPods: Type.Integer(),
  /** Jobs that reached a final status in the last hour, over all the account's endpoints. */
  jobsLastHour: Type.Integer(),
})
export type AccountOverview = Static<typeof AccountOverview>
