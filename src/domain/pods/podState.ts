import type { PodStatus } from '../../contract/pod.js'

/**
 * Everything that moves a pod between statuses. PodService's `move` is the only writer of a stored pod's
 * status, and it refuses a move this table does not allow. The API's actions (`podActions` in pod.ts) are a
 * stricter view for users: `start` is `place` from EXITED/ERROR, `restart` is `place` from RUNNING.
 */
export type PodEvent =
  /** capacity taken (or kept) for a start: created, started, restarted, or started again after a control-plane restart */
  | 'place'
  /** the runtime is starting its program */
  | 'launch'
  /** its program runs (started, or adopted after a control-plane restart) */
  | 'run'
  /** its start failed, its program failed, or its capacity was gone after a restart (capacity kept until start/terminate) */
  | 'fail'
  /** its program ended by itself with exit code 0 (capacity given back) */
  | 'exit'
  /** stopped by request (capacity given back) */
  | 'stop'
  /** terminated: the program, its disks and the record go */
  | 'terminate'

const TRANSITIONS: Record<PodEvent, { from: readonly PodStatus[]; to: PodStatus }> = {
  // PROVISIONING and STARTING: a pod caught mid-start by a control-plane restart is placed again.
  place: { from: ['EXITED', 'ERROR', 'RUNNING', 'PROVISIONING', 'STARTING'], to: 'PROVISIONING' },
  launch: { from: ['PROVISIONING'], to: 'STARTING' },
  // PROVISIONING: a program adopted after a control-plane restart.
  run: { from: ['STARTING', 'PROVISIONING'], to: 'RUNNING' },
  // ERROR: an ERROR pod whose capacity is also gone after a restart stays ERROR with that reason.
  fail: { from: ['PROVISIONING', 'STARTING', 'RUNNING', 'ERROR'], to: 'ERROR' },
  exit: { from: ['RUNNING'], to: 'EXITED' },
  stop: { from: ['PROVISIONING', 'STARTING', 'RUNNING'], to: 'EXITED' },
  terminate: { from: ['PROVISIONING', 'STARTING', 'RUNNING', 'EXITED', 'ERROR'], to: 'TERMINATED' },
}

/** The status `event` moves a pod in `from` to, or null when the event does not apply there. */
export function nextPodStatus(from: PodStatus, event: PodEvent): PodStatus | null {
  const t = TRANSITIONS[event]
  return t.from.includes(from) ? t.to : null
}

/** The statuses `event` applies to (for the refusal of an illegal move). */
export function podSourcesOf(event: PodEvent): PodStatus[] {
  return [...TRANSITIONS[event].from]
}

/** The status a new pod is stored with: it is created placed. */
export const INITIAL_POD_STATUS: PodStatus = TRANSITIONS.place.to
