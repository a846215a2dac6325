import type { Endpoint, EndpointList as EndpointListBody } from '../../../../src/contract/endpoint.js'
import type { AccountOverview } from '../../../../src/contract/metrics.js'
import { useSession } from '../../session.js'
import { Loading, Page, useLoad, when } from '../../ui.js'

/** One line describing what an endpoint's workers run on. */
export function computeOf(e: Endpoint): string {
  if (e.gpu) return `${e.gpu.count} × GPU (${e.gpu.pools.join(', ')})`
  if (e.cpu?.length) return e.cpu.map((c) => `${c.id} ${c.vcpuCount} vCPU`).join(' or ')
  return '—'
}

/** The account at a glance, above the endpoints (refreshed every 15 s). */
function Overview() {
  const { client } = useSession()
  const { data } = useLoad((signal) => client.get<AccountOverview>('/v2/account/overview', signal), [], 15_000)
  if (!data) return null
  const items: Array<[string, string]> = [
    ['Spend today', `$${data.spendToday.toFixed(2)}`],
    ['Running workers', String(data.runningWorkers)],
    ['Running pods', String(data.runningPods)],
    ['Jobs in the last hour', String(data.jobsLastHour)],
  ]
  return (
    <dl class="stats" aria-label="Account overview">
      {items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  )
}

export function EndpointList() {
  const { client } = useSession()
  const { data, error } = useLoad((signal) => client.get<EndpointListBody>('/v2/serverless', signal), [])
  return (
    <Page
      title="Endpoints"
      actions={
        <a class="button primary" href="/console/endpoints/new">
          New endpoint
        </a>
      }
    >
      <Overview />
      {!data ? (
        <Loading error={error} what="endpoints" />
      ) : data.endpoints.length === 0 ? (
        <p class="empty">No endpoints yet. Create one from a template to run jobs.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>Type</th>
                <th>Compute</th>
                <th>Workers</th>
                <th>Image</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody>
              {data.endpoints.map((e) => (
                <tr key={e.id}>
                  <td>
                    <a href={`/console/endpoints/${e.id}`}>{e.name}</a>
                    <div class="muted mono">{e.id}</div>
                  </td>
                  <td>{e.type}</td>
                  <td>{computeOf(e)}</td>
                  <td>
                    {e.workers.min}–{e.workers.max}
                  </td>
                  <td class="mono">{e.image}</td>
                  <td>{when(e.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Page>
  )
}
