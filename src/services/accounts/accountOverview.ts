import type { AccountOverview } from '../../contract/metrics.js'
import type { Principal } from './AccountService.js'
import type { BillingService } from '../billing/BillingService.js'
import type { EndpointMetricsRecorder } from '../endpoints/EndpointMetricsRecorder.js'
import type { EndpointService } from '../endpoints/EndpointService.js'
import type { WorkerHealth } from '../jobs/JobService.js'
import type { PodService } from '../pods/PodService.js'

/** What the overview reads. */
export interface AccountOverviewDeps {
  endpoints: EndpointService
  pods: PodService
  billing: BillingService
  workerHealth: (endpointId: string) => WorkerHealth
  endpointMetrics: EndpointMetricsRecorder
}

/** The caller's account at a glance: spend since 00:00 UTC, workers and pods up now, jobs of the last hour. */
export async function accountOverview(d: AccountOverviewDeps, principal: Principal): Promise<AccountOverview> {
  const [endpoints, pods, spend] = await Promise.all([
    d.endpoints.list(principal),
    d.pods.list(principal),
    d.billing.history(principal, 'aggregate', { bucketSize: 'day', lastN: 1 }),
  ])
  const ids = endpoints.map((e) => e.id)
  const runningWorkers = ids.reduce((n, id) => {
    const h = d.workerHealth(id)
    return n + h.running + h.idle
  }, 0)
  return {
    spendToday: Number(spend.metadata.totals.totalAmount ?? 0),
    runningWorkers,
    runningPods: pods.filter((p) => p.status === 'RUNNING').length,
    jobsLastHour: await d.endpointMetrics.jobsLastHour(ids),
  }
}
