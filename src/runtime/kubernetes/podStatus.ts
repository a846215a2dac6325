import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node'
import type { WorkloadExit } from '../RuntimeDriver.js'
import { CONTAINER } from './podManifest.js'

/**
 * What a Pod's phase, conditions and container states mean for the workload it runs, as pure functions of one
 * version of the Pod (the driver only applies them). Kubernetes reports the container of a Pod that cannot
 * start as `waiting` with a reason, a Pod the scheduler cannot place as a `PodScheduled=False` condition, and a
 * Pod the kubelet refused or evicted as phase `Failed` with a Pod-level reason.
 */

/** Container waiting reasons that mean the image cannot be had. */
const PULL_FAILURES = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'ErrImageNeverPull',
  'RegistryUnavailable',
])
/** Container waiting reasons that mean it cannot be created or started at all. */
const CREATE_FAILURES = new Set(['CreateContainerConfigError', 'CreateContainerError', 'RunContainerError'])

/** Where the start of a Pod stands, read from one version of it (or null once it is deleted). */
export type StartState =
  /** The container runs or has run: follow it (its end, if any, comes from `exitOf`). */
  | { kind: 'started' }
  /** Deleted before its container ran. */
  | { kind: 'deleted' }
  /** The image cannot be pulled (`IMAGE_PULL_FAILED`). */
  | { kind: 'pullFailed'; reason: string }
  /** The container cannot be created or started (a bad config, a runtime error). */
  | { kind: 'cannotStart'; reason: string }
  /** The Pod ended before its container ran: refused by its node (`OutOfcpu`, ...) or evicted. */
  | { kind: 'ended'; reason: string }
  /** No node can take it now (`NO_CAPACITY: <the scheduler's message>`); it may still be placed later. */
  | { kind: 'unschedulable'; why: string }
  /** Placed on a node, whose kubelet creates the container (the start's STARTING phase). */
  | { kind: 'creating' }
  /** Nothing to act on yet (accepted, being scheduled). */
  | { kind: 'pending' }

/** The status of the workload's container, if the kubelet has reported one. */
export function containerOf(pod: V1Pod): V1ContainerStatus | undefined {
  return pod.status?.containerStatuses?.find((s) => s.name === CONTAINER)
}

/** Where the start of `pod` stands (null: it was deleted). */
export function startStateOf(pod: V1Pod | null): StartState {
  if (!pod) return { kind: 'deleted' }
  const cs = containerOf(pod)
  if (cs?.state?.running || cs?.state?.terminated) return { kind: 'started' }
  const phase = pod.status?.phase
  if (phase === 'Failed' || phase === 'Succeeded') return { kind: 'ended', reason: podEndReason(pod) }
  const waiting = cs?.state?.waiting
  if (waiting?.reason && PULL_FAILURES.has(waiting.reason))
    return { kind: 'pullFailed', reason: `${waiting.reason}: ${waiting.message ?? imageOf(pod)}` }
  if (waiting?.reason && CREATE_FAILURES.has(waiting.reason))
    return { kind: 'cannotStart', reason: `${waiting.reason}: ${waiting.message ?? ''}`.trim() }
  const unschedulable = pod.status?.conditions?.find(
    (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
  )
  if (unschedulable) return { kind: 'unschedulable', why: `NO_CAPACITY: ${unschedulable.message ?? 'no node fits'}` }
  if (waiting?.reason === 'ContainerCreating' && pod.spec?.nodeName) return { kind: 'creating' }
  return { kind: 'pending' }
}

/**
 * How the workload ended, or null while it has not. `seen` is the latest version (null once the Pod is deleted),
 * `last` the latest that existed: a Pod deleted right after its container ended keeps that container's exit.
 */
export function exitOf(seen: V1Pod | null, last: V1Pod): WorkloadExit | null {
  const t = containerOf(last)?.state?.terminated
  if (t) {
    const exit: WorkloadExit = { code: t.exitCode ?? null, signal: t.signal ? `SIG${t.signal}` : null }
    const evicted = last.status?.phase === 'Failed' && last.status.reason
    if (t.reason === 'OOMKilled') exit.reason = `out of memory (OOM killed, code ${t.exitCode})`
    else if (evicted) exit.reason = `${podEndReason(last)} (code ${t.exitCode})`
    else if (t.reason && t.reason !== 'Completed' && t.reason !== 'Error')
      exit.reason = `${t.reason}${t.message ? `: ${t.message.trim()}` : ''} (code ${t.exitCode})`
    return exit
  }
  if (!seen) return { code: null, signal: 'SIGKILL', reason: `Pod ${nameOf(last)} was deleted` }
  // Ended without a container status: refused by the kubelet's admission or evicted before it ran.
  const phase = seen.status?.phase
  if (phase === 'Failed' || phase === 'Succeeded') return { code: null, signal: null, reason: podEndReason(seen) }
  return null
}

/** Whether the container has started (its output can be followed). */
export function containerStarted(pod: V1Pod): boolean {
  const state = containerOf(pod)?.state
  return Boolean(state?.running || state?.terminated)
}

/** Whether the Pod is scheduled or running (not ended). */
export function isRunning(pod: V1Pod): boolean {
  return pod.status?.phase === 'Running' || pod.status?.phase === 'Pending'
}

/** Whether the Pod is running and not being deleted: a workload to keep or adopt. */
export function isLive(pod: V1Pod): boolean {
  return isRunning(pod) && !pod.metadata?.deletionTimestamp
}

/** Why a Pod ended, as its status says (`Evicted: The node was low on resource: memory.`). */
function podEndReason(pod: V1Pod): string {
  const { reason, message } = pod.status ?? {}
  if (reason) return message ? `${reason}: ${message.trim()}` : reason
  return message?.trim() || `the Pod ${pod.status?.phase === 'Succeeded' ? 'succeeded' : 'failed'}`
}

function imageOf(pod: V1Pod): string {
  return pod.spec?.containers.find((c) => c.name === CONTAINER)?.image ?? pod.spec?.containers[0]?.image ?? ''
}

function nameOf(pod: V1Pod): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`.replace(/^\//, '')
}
