import { useState } from 'preact/hooks'
import type { Worker, WorkerList } from '../../../../src/contract/worker.js'
import { LogStream } from '../../LogStream.js'
import { useSession } from '../../session.js'
import { Badge, Loading, useLoad } from '../../ui.js'

/**
 * The endpoint's workers (refreshed every 2 s), why its jobs wait, and the live log of one worker. A load
 * balancer's workers show their last health check instead (it has no job queue).
 */
export function Workers({ endpointId, loadBalancer = false }: { endpointId: string; loadBalancer?: boolean }) {
  const { client } = useSession()
  const { data, error } = useLoad(
    (signal) => client.get<WorkerList>(`/v2/serverless/${endpointId}/workers`, signal),
    [endpointId],
    2000,
  )
  const [logsOf, setLogsOf] = useState<string | null>(null)
  if (!data) return <Loading error={error} what="workers" />
  const s = data.summary
  const all: Worker[] = [...data.workers, ...data.parked]
  return (
    <div>
      <p class="summary">
        {s.running} running · {s.idle} idle · {s.initializing} initializing · {s.throttled} throttled · {s.unhealthy}{' '}
        unhealthy
        {s.parked > 0 && ` · ${s.parked} parked`}
      </p>
      {!loadBalancer && (data.waiting.jobs > 0 || data.waiting.lowPriorityJobs > 0) && (
        <div class="waiting" role="status">
          <strong>
            {data.waiting.jobs} job{data.waiting.jobs === 1 ? '' : 's'} waiting
            {data.waiting.lowPriorityJobs > 0 && ` (+${data.waiting.lowPriorityJobs} low priority)`}
          </strong>
          {data.waiting.reason ? (
            <span>
              {' '}
              — {data.waiting.reason.code}: {data.waiting.reason.message}
            </span>
          ) : (
            <span> — a worker is about to take them</span>
          )}
        </div>
      )}
      {all.length === 0 ? (
        <p class="empty">
          No workers now: they start when {loadBalancer ? 'requests' : 'jobs'} arrive (or when workers.min is above 0).
        </p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Worker</th>
                <th>Status</th>
                {loadBalancer && <th>Health</th>}
                <th>Version</th>
                {!loadBalancer && <th>Jobs</th>}
                <th>Up</th>
                <th>Detail</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {all.map((w) => (
                <tr key={w.id} class={logsOf === w.id ? 'selected' : ''}>
                  <td class="mono">{w.id}</td>
                  <td>
                    <Badge value={w.status} />
                    {w.isStale && <span class="muted"> stale</span>}
                    {w.startPhase && (
                      <span class="muted">
                        {' '}
                        {w.startPhase.toLowerCase()}
                        {w.pull
                          ? ` ${mb(w.pull.bytes)}${w.pull.totalBytes ? ` / ${mb(w.pull.totalBytes)}` : ''} MB`
                          : ''}
                      </span>
                    )}
                  </td>
                  {loadBalancer && <td>{w.health ? <Badge value={w.health} /> : '—'}</td>}
                  <td>{w.version ?? '—'}</td>
                  {!loadBalancer && (
                    <td>
                      {w.jobsInProgress} running, {w.jobsDone} done
                    </td>
                  )}
                  <td>{w.uptimeSeconds !== null ? `${w.uptimeSeconds} s` : '—'}</td>
                  <td class="small">
                    {w.lastError ??
                      (w.gpuTypeId
                        ? `${w.gpuCount} × ${w.gpuTypeId}`
                        : w.cpuFlavorId
                          ? `${w.cpuFlavorId} ${w.vcpuCount} vCPU`
                          : '')}
                    {w.hostId && (
                      <div class="muted">
                        {w.runtime ?? 'runtime ?'} on {w.hostId}
                      </div>
                    )}
                    {w.coldStart && (
                      <div class="muted">
                        cold start: pull {w.coldStart.pullMs} ms, create {w.coldStart.createMs} ms, boot{' '}
                        {w.coldStart.bootMs ?? '…'} ms
                      </div>
                    )}
                  </td>
                  <td>
                    <button type="button" onClick={() => setLogsOf(w.id)}>
                      Logs
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {logsOf && (
        <LogStream
          title={logsOf}
          path={`/v2/serverless/${endpointId}/workers/${logsOf}/logs?tail=500`}
          endMessage="worker ended"
          onClose={() => setLogsOf(null)}
        />
      )}
    </div>
  )
}

/** Bytes as megabytes with one decimal. */
function mb(bytes: number): string {
  return (bytes / 1e6).toFixed(1)
}
