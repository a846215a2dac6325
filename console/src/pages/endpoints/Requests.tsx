import { useState } from 'preact/hooks'
import type { JobStatusView, RequestList, RequestSummary, WebhookDeliveryView } from '../../../../src/contract/job.js'
import { useSession } from '../../session.js'
import { Badge, Json, Loading, useLoad, when } from '../../ui.js'

/** The endpoint's latest jobs (GET /v2/{id}/requests, limited to 10 calls per 10 s: refreshed every 5 s). */
export function Requests({ endpointId }: { endpointId: string }) {
  const { client } = useSession()
  const { data, error } = useLoad(
    (signal) => client.get<RequestList>(`/v2/${endpointId}/requests?limit=50`, signal),
    [endpointId],
    5000,
  )
  const [open, setOpen] = useState<RequestSummary | null>(null)
  if (!data) return <Loading error={error} what="requests" />
  if (data.requests.length === 0) return <p class="empty">No requests yet: run a job from the “Run a job” tab.</p>
  return (
    // The table takes the whole width (ids stay on one line); an opened request shows below it.
    <div class="requests">
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Job</th>
              <th>Status</th>
              <th>Submitted</th>
              <th>Delay</th>
              <th>Execution</th>
            </tr>
          </thead>
          <tbody>
            {data.requests.map((r) => (
              <tr key={r.id} class={open?.id === r.id ? 'selected' : ''} onClick={() => setOpen(r)}>
                <td class="mono nowrap">
                  <button class="link" type="button">
                    {r.id}
                  </button>
                  {r.sync && <span class="muted"> sync</span>}
                </td>
                <td>
                  <Badge value={r.status} />
                </td>
                <td>{when(r.createdAt)}</td>
                <td>{r.delayTime !== undefined ? `${r.delayTime} ms` : '—'}</td>
                <td>{r.executionTime !== undefined ? `${r.executionTime} ms` : '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {open && (
        <div class="request-detail">
          <h2>{open.id}</h2>
          <p>
            Worker: <span class="mono">{open.workerId ?? '—'}</span> · started{' '}
            {open.startedAt ? when(open.startedAt) : '—'} · finished {open.completedAt ? when(open.completedAt) : '—'} ·
            requeued {open.retries}×
          </p>
          {open.error && <div class="problem">{open.error}</div>}
          <RequestOutput endpointId={endpointId} jobId={open.id} />
        </div>
      )}
    </div>
  )
}

/** The list leaves results out (they can be large): the opened request's output is read from /status. */
function RequestOutput({ endpointId, jobId }: { endpointId: string; jobId: string }) {
  const { client } = useSession()
  const { data, error } = useLoad(
    (signal) => client.get<JobStatusView>(`/v2/${endpointId}/status/${jobId}`, signal),
    [endpointId, jobId],
  )
  if (!data) return <Loading error={error} what="the output" />
  const deliveries =
    data.webhookDeliveries && data.webhookDeliveries.length > 0 ? (
      <WebhookDeliveries deliveries={data.webhookDeliveries} />
    ) : null
  if (data.output === undefined) {
    return (
      <>
        <p class="muted">No output{data.status === 'IN_QUEUE' || data.status === 'IN_PROGRESS' ? ' yet' : ''}.</p>
        {deliveries}
      </>
    )
  }
  return (
    <>
      <h2>Output</h2>
      <div class="request-output">
        <Json value={data.output} />
      </div>
      {deliveries}
    </>
  )
}

/** The job's webhook deliveries (GET /status's webhookDeliveries), every attempt with its answer or error. */
function WebhookDeliveries({ deliveries }: { deliveries: WebhookDeliveryView[] }) {
  return (
    <>
      <h2>Webhook</h2>
      {deliveries.map((d) => (
        <div key={d.id}>
          <p>
            <Badge value={d.state} /> <span class="mono">{d.url}</span> · <span class="mono muted">{d.id}</span>
            {d.nextAttemptAt && <span class="muted"> · next attempt {when(d.nextAttemptAt)}</span>}
          </p>
          <table>
            <tbody>
              {d.attempts.map((a, i) => (
                <tr key={i}>
                  <td>{when(a.at)}</td>
                  <td>{a.statusCode ?? '—'}</td>
                  <td>{a.durationMs} ms</td>
                  <td>{a.error ?? 'delivered'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
    </>
  )
}
