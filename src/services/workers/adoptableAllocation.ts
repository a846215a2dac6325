import type { Allocation } from '../../catalog/Fleet.js'
import { LABELS } from '../../runtime/labels.js'
import type { ListedWorkload } from '../../runtime/RuntimeDriver.js'
import type { WorkerRecord } from '../../store/WorkerStore.js'

/**
 * Whether a worker of the previous run can be taken back, and on which capacity: it must still run, have
 * been told `url` (the URL workers of its host reach this control plane at now; '' when unknown), and
 * carry the allocation it was placed on. The endpoint's existence and the capacity are checked by the caller.
 */
export function adoptableAllocation(r: WorkerRecord, found: ListedWorkload, url: string): Allocation | null {
  if (!found.running || !r.runtimeRef || !r.hostId || !url || found.labels[LABELS.controlPlane] !== url) return null
  try {
    const a = JSON.parse(found.labels[LABELS.allocation] ?? '') as Allocation
    return a.hostId === r.hostId ? { ...a, id: r.id } : null
  } catch {
    // A label that is not an allocation (another version wrote it, or someone edited it): not adoptable.
    return null
  }
}
