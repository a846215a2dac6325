import type { CatalogService } from '../../catalog/CatalogService.js'
import type { Clock } from '../../domain/clock.js'
import type { EndpointRecord } from '../../domain/endpoints/endpoint.js'
import type { LbHealth } from '../../domain/workers/planLbScaling.js'
import type { WorkerPhase } from '../../domain/workers/workerState.js'
import type { ChangeFeed } from '../../replicas/ChangeFeed.js'
import type { RuntimeDriver, WorkloadSpec } from '../../runtime/RuntimeDriver.js'
import type { Store } from '../../store/Store.js'
import type { WorkerMeter } from '../billing/UsageMeter.js'
import type { JobEvents } from '../jobs/JobEvents.js'
import type { JobLifecycle } from '../jobs/JobLifecycle.js'
import type { JobsConfig } from '../jobs/jobsConfig.js'
import type { Log } from '../log.js'
import type { Metrics } from '../Metrics.js'
import type { NetworkVolumeService } from '../storage/NetworkVolumeService.js'
import type { WorkerListContext } from './workerList.js'
import type { ShareStanding } from '../../domain/quotas/fairShare.js'

// The types the parts of services/workers share with each other and with their consumers. They live here, not
// in WorkerService.ts (the facade), so that no part and no consumer depends on the facade for a type.

export interface WorkerServiceDeps {
  store: Store
  clock: Clock
  runtime: RuntimeDriver
  /** The fleet's capacity ledger and the GPU pools (placement reads nothing else of the catalog). */
  catalog: Pick<CatalogService, 'fleet' | 'pools'>
  lifecycle: JobLifecycle
  events: JobEvents
  config: JobsConfig
  /** Where network volumes live on the host. */
  networkVolumes: Pick<NetworkVolumeService, 'pathOf'>
  /** Id of this installation: every workload is labelled with it. */
  installationId: string
  /**
   * Base URL of the control plane as workers on `hostId` reach it (read at each start: known only after
   * listen; '' while unknown).
   */
  baseUrl: (hostId: string) => string
  log: Log
  /** The runtime name of a host (`process`, `docker`), for the workers view. */
  runtimeOf?: (hostId: string) => string
  /** Credentials for an endpoint's private image (its `registry`), or null when it has none. */
  pullAuth?: (ep: EndpointRecord) => Promise<WorkloadSpec['pullAuth']>
  /** Monotonic ms for heartbeats, idle and parked times, crash back-off: process liveness is real time, whatever the business clock says. */
  monotonic?: () => number
  /** Billing: told when a worker starts serving (its first call, or unparked) and stops (parked, exited). */
  meter?: WorkerMeter
  /** Fair share between accounts (see WorkerPlacer): their standing in GPUs held, guarantee and weight. */
  share?: { standings(accountIds: Iterable<string>): ShareStanding[] }
  /** Observes cold starts. */
  metrics?: Metrics
  /** How long a retiring load-balancing worker may keep requests and WebSockets before it is stopped anyway. */
  lbDrainMs?: number
  /**
   * Several control-plane processes: the leader owns the live workers and describes them to the others
   * (`worker.state`); a follower serves their protocol calls and sends what it sees to the leader.
   */
  feed?: ChangeFeed
}

/** Why an endpoint's waiting jobs wait, as the autoscaler sees it (see Autoscaler.waiting). */
export interface ScalingSignals {
  waiting(endpointId: string): Promise<WorkerListContext['waiting']>
}

/** The last health check of a load-balancing worker (see HealthPoller). */
export interface HealthReadings {
  health(workerId: string): LbHealth | undefined
}

/** Where a load-balancing worker serves HTTP (PORT) and answers health checks (PORT_HEALTH), as published by the runtime. */
export interface HttpAddress {
  host: string
  port: number
  healthPort: number
  /** HEALTH_CHECK_PATH, starting with `/`. */
  healthPath: string
}

/** A load-balancing worker as the balancer and the health checks see it. */
export interface HttpWorker {
  id: string
  endpointId: string
  /** 'ready' once a health check answered 200 (only those get traffic, unless parked or retiring). */
  phase: WorkerPhase
  retiring: boolean
  /** Requests in flight on it. */
  inFlight: number
  address: HttpAddress
}

/** What a worker's job-take may do now; see `WorkerService.takeTurn`. */
export type TakeTurn = 'take' | 'hold' | 'drain'

/** Outcome of adding a worker; `capacity` tells "no room in the fleet" (it stays THROTTLED) from a broken worker. */
export type StartResult = { ok: true; workerId: string } | { ok: false; capacity: boolean; reason: string }
