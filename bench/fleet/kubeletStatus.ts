/**
 * What a kubelet reports, for the fake Nodes of bench/fleet/VirtualNodes.ts: a Ready Node's conditions, and a
 * Pod whose containers run or are still being created. Plain JSON for merge patches of the status subresource.
 */

/** A MicroTime (a Lease's renewTime): RFC 3339 with exactly six fractional digits. */
export function microTime(): string {
  return new Date().toISOString().replace('Z', '000Z')
}

export function readyConditions() {
  const now = new Date().toISOString()
  const ok = (type: string, reason: string) => ({
    type,
    status: 'False',
    reason,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  })
  return [
    { type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: now, lastTransitionTime: now },
    ok('MemoryPressure', 'KubeletHasSufficientMemory'),
    ok('DiskPressure', 'KubeletHasNoDiskPressure'),
    ok('PIDPressure', 'KubeletHasSufficientPID'),
  ]
}

/** A kubelet's status of a Pod whose containers run. */
export function runningStatus(pod: any) {
  const now = new Date().toISOString()
  const cond = (type: string) => ({ type, status: 'True', lastTransitionTime: now })
  return {
    status: {
      phase: 'Running',
      conditions: [cond('Initialized'), cond('Ready'), cond('ContainersReady'), cond('PodScheduled')],
      hostIP: '127.0.0.1',
      podIP: '127.0.0.1',
      podIPs: [{ ip: '127.0.0.1' }],
      startTime: now,
      containerStatuses: (pod.spec.containers as any[]).map((c) => ({
        name: c.name,
        image: c.image,
        imageID: '',
        ready: true,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: now } },
      })),
    },
  }
}

/** A kubelet's status of a Pod whose image is still being pulled. */
export function creatingStatus(pod: any) {
  const now = new Date().toISOString()
  return {
    status: {
      hostIP: '127.0.0.1',
      startTime: now,
      containerStatuses: (pod.spec.containers as any[]).map((c) => ({
        name: c.name,
        image: c.image,
        imageID: '',
        ready: false,
        restartCount: 0,
        state: { waiting: { reason: 'ContainerCreating' } },
      })),
    },
  }
}
