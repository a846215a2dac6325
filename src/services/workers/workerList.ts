import type { Worker, WorkerList, WorkerStatus, WaitingReason } from '../../contract/worker.js'
import { iso } from '../../domain/clock.js'
import { apiStatusOf } from '../../domain/workers/workerState.js'
import type { WorkerHealth } from '../jobs/JobService.js'
import type { LiveWorker } from './LiveWorker.js'
import type { LbHealth } from '../../domain/workers/planLbScaling.js'

/** What the listing needs besides the workers. Times: `now` from the business clock, `mono` monotonic. */
export interface WorkerListContext {
  endpointVersion: number
  now: number
  mono: number
  /** ms left of the endpoint's crash back-off. */
  backoffMs: number
  /** How long a worker of this endpoint stays parked. */
  parkWindowMs: number
  waiting: { jobs: number; lowPriorityJobs: number; reason: WaitingReason | null }
  /** The runtime of a host (`process`, `docker`), for workers still being started. */
  runtimeOf?: (hostId: string) => string
  /** The URL workers of a host are told to call, for a worker that has not called in yet. */
  workerUrl?: (hostId: string) => string
  /** Health-check state of a load-balancing worker (none for queue workers). */
  health?: (workerId: string) => LbHealth | undefined
}

/** The API status of a worker; null for one on its way out (not listed). */
const statusOf = (w: LiveWorker): WorkerStatus | null => apiStatusOf(w.phase, w.jobs.size)

/**
 * GET /v2/serverless/{id}/workers from an endpoint's live workers: active ones in `workers` (their five
 * counts add up to `total`), FlashBoot-parked ones apart, and why waiting jobs wait.
 */
export function workerList(live: LiveWorker[], c: WorkerListContext): WorkerList {
  const workers: Worker[] = []
  const parked: Worker[] = []
  for (const w of live) {
    const status = statusOf(w)
    if (!status) continue
    const r = w.record
    const a = w.allocation
    const view: Worker = {
      id: w.id,
      status,
      isStale: r !== null && r.version !== c.endpointVersion,
      gpuCount: r?.gpuCount ?? 0,
      version: r?.version ?? null,
      image: r?.image ?? null,
      uptimeSeconds:
        r?.startedAt != null && status !== 'UNHEALTHY' ? Math.max(0, Math.floor((c.now - r.startedAt) / 1000)) : null,
      gpuTypeId: r?.gpuTypeId ?? null,
      dataCenterId: r?.dataCenterId ?? null,
      startedAt: r?.startedAt != null ? iso(r.startedAt) : null,
      cpuFlavorId: a?.cpuFlavorId ?? null,
      vcpuCount: a?.vcpus ? a.vcpus : null,
      hostId: a?.hostId ?? null,
      runtime: r?.runtimeRef
        ? r.runtimeRef.slice(0, r.runtimeRef.indexOf(':'))
        : a && c.runtimeOf
          ? c.runtimeOf(a.hostId)
          : null,
      startPhase: status === 'INITIALIZING' ? w.startPhase : null,
      pull: status === 'INITIALIZING' && w.startPhase === 'PULLING' ? w.pull : null,
      coldStart: coldStart(w),
      cudaVersion: a?.cudaVersion ?? null,
      jobsInProgress: w.jobs.size,
      jobsDone: w.jobsDone,
      retiring: w.retiring,
      lastError: w.lastError ?? (status === 'INITIALIZING' ? silentStart(w, c) : null),
      nextStartAt: status === 'UNHEALTHY' ? iso(c.now + c.backoffMs) : null,
      parkedUntil: status === 'PARKED' ? iso(c.now + Math.max(0, w.phaseSince + c.parkWindowMs - c.mono)) : null,
    }
    const health = c.health?.(w.id)
    if (health) view.health = health
    ;(status === 'PARKED' ? parked : workers).push(view)
  }
  const count = (s: WorkerStatus) => workers.filter((w) => w.status === s).length
  return {
    workers,
    parked,
    summary: {
      running: count('RUNNING'),
      idle: count('IDLE'),
      initializing: count('INITIALIZING'),
      throttled: count('THROTTLED'),
      unhealthy: count('UNHEALTHY'),
      total: workers.length,
      parked: parked.length,
    },
    endpointVersion: c.endpointVersion,
    waiting: c.waiting,
  }
}

/** A started worker silent this long is said (in `lastError`) not to reach the control plane. */
export const SILENT_START_MS = 10_000

/** `has not called in for 14 s: it cannot reach http://...` for a started worker that never called in, else null. */
function silentStart(w: LiveWorker, c: WorkerListContext): string | null {
  if (w.startPhase !== 'STARTING' || !w.allocation) return null
  const silentMs = c.mono - (w.timeline?.started ?? w.startedAt)
  if (silentMs < SILENT_START_MS) return null
  const url = c.workerUrl?.(w.allocation.hostId)
  return `has not called in for ${Math.floor(silentMs / 1000)} s: it cannot reach ${url || 'the control plane'}, or its program is not a worker (see its log; \`hangar engine check\` tests that URL from a container)`
}

/** /health worker counters; `ready` counts workers that called in and take jobs (idle or running). */
export function workerHealth(live: LiveWorker[]): WorkerHealth {
  const count = (s: WorkerStatus) => live.filter((w) => statusOf(w) === s).length
  const idle = count('IDLE')
  const running = count('RUNNING')
  return {
    idle,
    initializing: count('INITIALIZING'),
    ready: idle + running,
    running,
    throttled: count('THROTTLED'),
    unhealthy: count('UNHEALTHY'),
  }
}

/** How a worker's start was spent, from its timeline (monotonic ms). */
function coldStart(w: LiveWorker): Worker['coldStart'] {
  const t = w.timeline
  if (!t || t.started === null) return null
  const pulled = t.pulled ?? t.launch
  return {
    pullMs: Math.round(pulled - t.launch),
    createMs: Math.round(t.started - pulled),
    bootMs: t.called === null ? null : Math.round(t.called - t.started),
  }
}
