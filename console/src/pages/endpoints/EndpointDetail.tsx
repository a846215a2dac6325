import { useLocation, useRoute } from 'preact-iso'
import type { Endpoint } from '../../../../src/contract/endpoint.js'
import type { Health } from '../../../../src/contract/job.js'
import { useSession } from '../../session.js'
import { Json, Loading, Page, Problems, confirmDelete, useAction, useLoad, when } from '../../ui.js'
import { EndpointForm } from './EndpointForm.js'
import { computeOf } from './EndpointList.js'
import { JobTester } from './JobTester.js'
import { Releases } from './Releases.js'
import { Requests } from './Requests.js'
import { Workers } from './Workers.js'

const TABS = [
  { id: 'overview', label: 'Overview' },
  { id: 'jobs', label: 'Run a job' },
  { id: 'requests', label: 'Requests' },
  { id: 'workers', label: 'Workers' },
  { id: 'releases', label: 'Releases' },
  { id: 'edit', label: 'Edit' },
] as const

/** One endpoint, with a tab per concern; the tab is part of the URL so a reload keeps it. */
export function EndpointDetail() {
  const { params } = useRoute()
  const { route } = useLocation()
  const { client } = useSession()
  const id = params.id
  const tab = params.tab ?? 'overview'
  const { data: ep, error, reload } = useLoad((signal) => client.get<Endpoint>(`/v2/serverless/${id}`, signal), [id])
  const del = useAction(async () => {
    if (!ep || !confirmDelete(`endpoint ${ep.name}`)) return
    await client.del(`/v2/serverless/${id}`)
    route('/console/endpoints')
  })
  if (!ep) return <Page title="Endpoint">{<Loading error={error} what="the endpoint" />}</Page>
  return (
    <Page
      title={ep.name}
      actions={
        <button class="danger" onClick={() => void del.run()} disabled={del.busy}>
          Delete
        </button>
      }
    >
      <Problems error={del.error} />
      <nav class="tabs" aria-label="Endpoint">
        {TABS.map((t) => (
          <a key={t.id} href={`/console/endpoints/${id}/${t.id}`} class={tab === t.id ? 'active' : ''} aria-current={tab === t.id ? 'page' : undefined}>
            {t.label}
          </a>
        ))}
      </nav>
      {tab === 'overview' && <Overview ep={ep} />}
      {tab === 'jobs' && <JobTester endpointId={ep.id} />}
      {tab === 'requests' && <Requests endpointId={ep.id} />}
      {tab === 'workers' && <Workers endpointId={ep.id} />}
      {tab === 'releases' && <Releases endpointId={ep.id} />}
      {tab === 'edit' && (
        <EndpointForm
          endpoint={ep}
          onSaved={() => {
            reload()
            route(`/console/endpoints/${id}/overview`)
          }}
        />
      )}
    </Page>
  )
}

function Overview({ ep }: { ep: Endpoint }) {
  const { client } = useSession()
  const health = useLoad((signal) => client.get<Health>(`/v2/${ep.id}/health`, signal), [ep.id], 3000)
  return (
    <div class="grid">
      <dl class="facts">
        <dt>Id</dt>
        <dd class="mono">{ep.id}</dd>
        <dt>Image</dt>
        <dd class="mono">{ep.image}</dd>
        <dt>Compute</dt>
        <dd>{computeOf(ep)}</dd>
        <dt>Workers</dt>
        <dd>
          min {ep.workers.min}, max {ep.workers.max}
          {ep.workers.idleTimeout !== undefined && `, idle ${ep.workers.idleTimeout} s`}
        </dd>
        <dt>Scaling</dt>
        <dd>{ep.scaling.type === 'QUEUE_DELAY' ? `queue delay ${ep.scaling.queueDelay} s` : `${ep.scaling.requestCount} requests per worker`}</dd>
        <dt>FlashBoot</dt>
        <dd>{ep.flashboot}</dd>
        <dt>Timeout</dt>
        <dd>{ep.timeout} ms</dd>
        <dt>Created</dt>
        <dd>{when(ep.createdAt)}</dd>
      </dl>
      <div>
        <h2>Health</h2>
        {health.data ? <Json value={health.data} /> : <Loading error={health.error} what="health" />}
        <h2>Request URLs</h2>
        <Json value={ep.requestUrls} />
      </div>
    </div>
  )
}
