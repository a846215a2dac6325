import { EventEmitter } from 'node:events'
import type { PodStatus } from '../../contract/pod.js'
import type { PodRecord } from '../../domain/pods/pod.js'

/** One change of a pod's status; `from` is null for the first (the create). */
export interface PodTransition {
  /** The pod as stored right after the change (its GPU/CPU, disk, cloud: what metering needs). */
  pod: PodRecord
  from: PodStatus | null
  to: PodStatus
  /** RFC 3339. */
  at: string
}

/**
 * Pod lifecycle transitions, for whoever meters or watches pods (billing) without touching PodService.
 * Listeners run synchronously after the change is stored; a throwing listener does not disturb the others.
 *
 * @example events.on((t) => meter.record(t.pod.id, t.from, t.to, t.at))
 */
export class PodEvents {
  private readonly emitter = new EventEmitter()

  constructor() {
    this.emitter.setMaxListeners(0)
  }

  /** Calls `listener` for every transition; returns the unsubscribe function. */
  on(listener: (t: PodTransition) => void): () => void {
    const safe = (t: PodTransition) => {
      try {
        listener(t)
      } catch {
        // A broken listener must not fail a pod's lifecycle.
      }
    }
    this.emitter.on('transition', safe)
    return () => this.emitter.off('transition', safe)
  }

  emit(t: PodTransition): void {
    this.emitter.emit('transition', t)
  }
}
