import type { Allocation } from '../../catalog/Fleet.js'
import type { PriceBook, Rate } from '../../domain/billing/PriceBook.js'
import type { UsageComponent, UsageProduct, UsageSubject } from '../../domain/billing/usage.js'
import type { PodRecord } from '../../domain/pods/pod.js'

/** What a worker bills for while it serves: its GPUs or vCPUs, its container disk, and the fee (when priced). */
export function workerUsage(
  prices: PriceBook,
  w: { id: string; endpointId: string; accountId: string; allocation: Allocation },
  diskGb: number,
): UsageSubject[] {
  const a = w.allocation
  const base = {
    accountId: w.accountId,
    product: 'serverless' as const,
    resourceId: w.endpointId,
    partId: w.id,
    gpuTypeId: a.gpuTypeId,
  }
  const out: UsageSubject[] = [
    a.gpuTypeId
      ? subject(base, 'gpu', a.gpuIndices.length, prices.serverlessGpu(a.gpuTypeId, a.gpuIndices.length))
      : subject(base, 'cpu', a.vcpus, prices.serverlessCpu(a.cpuFlavorId ?? '', a.vcpus)),
  ]
  if (diskGb > 0) out.push(subject(base, 'disk', diskGb, prices.serverlessDisk(diskGb)))
  const fee = prices.serverlessFee()
  if (fee.micros > 0) out.push(subject(base, 'fee', 1, fee))
  return out
}

/** A network volume bills its size, at the price of its type, for as long as it exists. */
export function volumeUsage(
  prices: PriceBook,
  v: { id: string; accountId: string; size: number; type: 'STANDARD' | 'HIGH_PERFORMANCE' },
): UsageSubject[] {
  const base = { accountId: v.accountId, product: 'volume' as const, resourceId: v.id, partId: null, gpuTypeId: null }
  return [
    subject(base, v.type === 'STANDARD' ? 'standard' : 'highPerformance', v.size, prices.networkVolume(v.type, v.size)),
  ]
}

function subject(
  base: {
    accountId: string
    product: UsageProduct
    resourceId: string
    partId: string | null
    gpuTypeId: string | null
  },
  component: UsageComponent,
  quantity: number,
  rate: Rate,
): UsageSubject {
  return { ...base, component, quantity, priceMicros: rate.micros, periodMs: rate.periodMs }
}

/** What a pod bills now, by meter slot: `compute` while RUNNING, `disk` while it exists (not TERMINATED). */
export function podUsage(prices: PriceBook, pod: PodRecord): { compute: UsageSubject[]; disk: UsageSubject[] } {
  if (pod.status === 'TERMINATED') return { compute: [], disk: [] }
  // A cluster member bills under its cluster (by member pod); a standalone pod under itself. The part names
  // the meter slot, so compute and disk open and close apart.
  const member = pod.cluster !== null
  const base = (slot: 'compute' | 'disk') => ({
    accountId: pod.accountId,
    product: member ? ('cluster' as const) : ('pod' as const),
    resourceId: member ? pod.cluster!.id : pod.id,
    partId: member ? `${pod.id}:${slot}` : slot,
    gpuTypeId: pod.gpu?.id ?? null,
  })
  const compute: UsageSubject[] = []
  if (pod.status === 'RUNNING') {
    if (pod.gpu)
      compute.push(
        subject(
          base('compute'),
          'gpu',
          pod.gpu.count,
          member ? prices.podGpu(pod.gpu.id, pod.gpu.count) : prices.podGpu(pod.gpu.id, pod.gpu.count, pod.cloud),
        ),
      )
    else if (pod.cpu)
      compute.push(subject(base('compute'), 'cpu', pod.cpu.vcpuCount, prices.podCpu(pod.cpu.id, pod.cpu.vcpuCount)))
    if (member) {
      const net = prices.clusterNetworking(1)
      if (net.micros > 0) compute.push(subject(base('compute'), 'networking', 1, net))
    }
  }
  const disk: UsageSubject[] = []
  const persistent = pod.mounts.persistent?.size ?? 0
  if (member) {
    if (pod.disk + persistent > 0)
      disk.push(subject(base('disk'), 'disk', pod.disk + persistent, prices.clusterDisk(pod.disk + persistent)))
  } else {
    if (pod.disk > 0) disk.push(subject(base('disk'), 'disk', pod.disk, prices.containerDisk(pod.disk)))
    if (persistent > 0) disk.push(subject(base('disk'), 'disk', persistent, prices.persistentDisk(persistent)))
  }
  return { compute, disk }
}
