import type { WaitingReason } from '../../contract/worker.js'
import { isCounted, type EndpointScaling } from '../workers/planScaling.js'
import { QUOTA_PREFIX } from '../quotas/quotas.js'

/** What the scaler knows beyond the snapshot about why workers are missing. */
export interface WaitingContext {
  /** Why the last placement failed, while workers are throttled. */
  noCapacity: string | null
  /** Why starting workers wait for their runtime to place them (a Kubernetes scheduler: `NO_CAPACITY: ...`), if they do. */
  pendingCapacity?: string | null
  /** Consecutive failures of the endpoint's workers, and the last one. */
  failures: number
  lastFailure: string | null
  /** Jobs requeued lately because the worker that took them never acknowledged them, once that repeats. */
  drops?: { count: number; workerIds: string[]; windowMs: number } | null
}

/**
 * Why a waiting job of this endpoint is not running, or null when a worker is about to take it. Checked
 * in order: workers that drop the jobs they take (whatever else holds, nothing runs until that is fixed),
 * a free worker (null), lowPriority, workers.max 0, a quota (QUOTA), no capacity, crash loop, cold start, max
 * reached (or a rollout holding the max), queueDelay not yet elapsed.
 */
export function waitingReason(e: EndpointScaling, ctx: WaitingContext, lowPriority: boolean): WaitingReason | null {
  if (ctx.drops) return dropsReason(ctx.drops)
  const counted = e.workers.filter(isCounted)
  const n = (s: string) => counted.filter((w) => w.state === s).length
  if (n('idle') > 0) return null
  const retiring = e.workers.filter((w) => w.state === 'running' && (w.retiring || w.stale)).length
  if (lowPriority) {
    if (counted.length + retiring === 0)
      return {
        code: 'LOW_PRIORITY',
        message: 'lowPriority jobs never start workers: this job runs once a worker of the endpoint exists and is free',
      }
    if (n('running') + retiring > 0 && n('starting') === 0)
      return {
        code: 'LOW_PRIORITY',
        message: `lowPriority: waits for one of the ${n('running') + retiring} busy workers to be free (normal jobs go first)`,
      }
  }
  if (e.max === 0) return { code: 'MAX_REACHED', message: 'workers.max is 0: no worker may run' }
  if (n('throttled') > 0 && ctx.noCapacity?.startsWith(QUOTA_PREFIX))
    return {
      code: 'QUOTA',
      message: `${n('throttled')} wanted worker(s) wait for the account's quota: ${ctx.noCapacity.slice(QUOTA_PREFIX.length)}`,
    }
  if (n('throttled') > 0)
    return {
      code: 'NO_CAPACITY',
      message: `no capacity for ${n('throttled')} wanted worker(s): ${ctx.noCapacity ?? 'nothing in the fleet fits'}`,
    }
  if (n('unhealthy') > 0 || e.backoffMs > 0) {
    const next = e.backoffMs > 0 ? `; next start in ${Math.ceil(e.backoffMs / 1000)} s` : ''
    return {
      code: 'CRASH_LOOP',
      message: `workers are crash-looping (${ctx.failures} failure(s) in a row; last: ${ctx.lastFailure ?? 'unknown'})${next}`,
    }
  }
  if (n('starting') > 0 && ctx.pendingCapacity)
    return {
      code: 'NO_CAPACITY',
      message: `${n('starting')} worker(s) starting wait for the cluster to place them: ${ctx.pendingCapacity.replace(/^NO_CAPACITY: /, '')}`,
    }
  if (n('starting') > 0) return { code: 'COLD_START', message: `${n('starting')} worker(s) starting (cold start)` }
  if (counted.length + retiring >= e.max) {
    if (retiring > 0)
      return {
        code: 'ROLLOUT',
        message: `all ${e.max} workers (workers.max) are busy; ${retiring} of them run an older release and are replaced once their jobs end`,
      }
    return { code: 'MAX_REACHED', message: `all ${e.max} workers (workers.max) are busy` }
  }
  if (e.policy.type === 'QUEUE_DELAY' && e.oldestWaitMs < e.policy.queueDelayMs) {
    return {
      code: 'QUEUE_DELAY',
      message: `all ${counted.length} workers are busy; QUEUE_DELAY adds workers once a job has waited ${e.policy.queueDelayMs / 1000} s`,
    }
  }
  return null
}

/** WORKER_DROPS_JOBS: what a user with a broken worker needs to read to find the cause. */
export function dropsReason(d: NonNullable<WaitingContext['drops']>): WaitingReason {
  const who =
    d.workerIds.length === 1
      ? `worker ${d.workerIds[0]}`
      : `workers ${d.workerIds.slice(0, 3).join(', ')}${d.workerIds.length > 3 ? ', ...' : ''}`
  return {
    code: 'WORKER_DROPS_JOBS',
    message:
      `${d.count} job(s) in the last ${Math.round(d.windowMs / 60_000)} min were taken by ${who} and never acknowledged (its pings did not list them), so they went back to the queue: ` +
      'the worker drops what job-take hands it; check its log (GET /v2/serverless/{id}/workers/{workerId}/logs) and that its SDK accepts the answer',
  }
}
