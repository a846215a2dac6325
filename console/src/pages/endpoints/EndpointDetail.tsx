import { useLocation, useRoute } from 'preact-iso'
import type { Endpoint } from '../../../../src/contract/endpoint.js'
import type { Health } from '../../../../src/contract/job.js'
import { useSession } from '../../session.js'
import { CopyButton, Loading, NotFoundView, Page, Problems, confirmDelete, useAction, useLoad, when } from '../../ui.js'
import { EndpointForm } from './EndpointForm.js'
import { computeOf } from './EndpointList.js'
import { JobTester } from './JobTester.js'
import { Metrics } from './Metrics.js'
import { Releases } from './Releases.js'
import { Requests } from './Requests.js'
import { Workers } from './Workers.js'

/** The tabs of each endpoint type: a load balancer has no job queue, so no job tester nor requests list. */
const TABS = {
  QUEUE: [
    { id: 'overview', label: 'Overview' },
    { id: 'metrics', label: 'Metrics' },
    { id: 'jobs', label: 'Run a job' },
    { id: 'requests', label: 'Requests' },
    { id: 'workers', label: 'Workers' },
    { id: 'releases', label: 'Releases' },
    { id: 'edit', label: 'Edit' },
  ],
  LOAD_BALANCER: [
    { id: 'overview', label: 'Overview' },
    { id: 'metrics', label: 'Metrics' },
    { id: 'workers', label: 'Workers' },
    { id: 'releases', label: 'Releases' },
    { id: 'edit', label: 'Edit' },
  ],
} as const

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
  const tabs = TABS[ep.type]
  if (!tabs.some((t) => t.id === tab))
    return (
      <NotFoundView
        what={`The endpoint ${ep.name} has no “${tab}” tab.`}
        back={{ href: `/console/endpoints/${id}`, label: `Back to ${ep.name}` }}
      />
    )
  return (
    <Page
      title={ep.name}
      actions={
        <button type="button" class="danger" onClick={() => void del.run()} disabled={del.busy}>
          Delete
        </button>
      }
    >
      <Problems error={del.error} />
      <nav class="tabs" aria-label="Endpoint">
        {tabs.map((t) => (
          <a
            key={t.id}
            href={`/console/endpoints/${id}/${t.id}`}
            class={tab === t.id ? 'active' : ''}
            aria-current={tab === t.id ? 'page' : undefined}
          >
            {t.label}
          </a>
        ))}
      </nav>
      {tab === 'overview' && (ep.type === 'LOAD_BALANCER' ? <LbOverview ep={ep} /> : <Overview ep={ep} />)}
      {tab === 'metrics' && <Metrics ep={ep} />}
      {tab === 'jobs' && <JobTester endpointId={ep.id} />}
      {tab === 'requests' && <Requests endpointId={ep.id} />}
      {tab === 'workers' && <Workers endpointId={ep.id} loadBalancer={ep.type === 'LOAD_BALANCER'} />}
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

function Facts({ ep }: { ep: Endpoint }) {
  return (
    <dl class="facts">
      <dt>Id</dt>
      <dd class="mono">{ep.id}</dd>
      <dt>Type</dt>
      <dd>{ep.type === 'LOAD_BALANCER' ? 'Load balancer' : 'Queue'}</dd>
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
      <dd>
        {ep.scaling.type === 'QUEUE_DELAY'
          ? `queue delay ${ep.scaling.queueDelay} s`
          : `${ep.scaling.requestCount} requests per worker`}
      </dd>
      {ep.type === 'LOAD_BALANCER' && (
        <>
          <dt>Port</dt>
          <dd>
            {ep.env.PORT ?? '80'}
            {ep.env.PORT_HEALTH && ep.env.PORT_HEALTH !== ep.env.PORT && `, health on ${ep.env.PORT_HEALTH}`}
          </dd>
          <dt>Health path</dt>
          <dd class="mono">{ep.env.HEALTH_CHECK_PATH ?? '/ping'}</dd>
        </>
      )}
      <dt>FlashBoot</dt>
      <dd>{ep.flashboot}</dd>
      <dt>Timeout</dt>
      <dd>{ep.timeout} ms</dd>
      <dt>Created</dt>
      <dd>{when(ep.createdAt)}</dd>
    </dl>
  )
}

/** Request URLs as a labelled list, each with a copy button. */
function Urls({ urls }: { urls: Record<string, string> }) {
  return (
    <dl class="urls">
      {Object.entries(urls).map(([name, url]) => (
        <div key={name}>
          <dt>{name}</dt>
          <dd>
            <code class="url">{url}</code> <CopyButton text={url} />
          </dd>
        </div>
      ))}
    </dl>
  )
}

function Overview({ ep }: { ep: Endpoint }) {
  const { client } = useSession()
  const health = useLoad((signal) => client.get<Health>(`/v2/${ep.id}/health`, signal), [ep.id], 3000)
  const h = health.data
  return (
    <div class="grid">
      <Facts ep={ep} />
      <div>
        <h2>Health</h2>
        {h ? (
          <dl class="stats" aria-label="Health">
            {(
              [
                ['In queue', h.jobs.inQueue],
                ['In progress', h.jobs.inProgress],
                ['Completed', h.jobs.completed],
                ['Failed', h.jobs.failed],
                ['Workers ready', h.workers.ready],
                ['Initializing', h.workers.initializing],
                ['Throttled', h.workers.throttled],
                ['Unhealthy', h.workers.unhealthy],
              ] as const
            ).map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
        ) : (
          <Loading error={health.error} what="health" />
        )}
        <h2>Request URLs</h2>
        <Urls urls={ep.requestUrls} />
      </div>
    </div>
  )
}

/** A load balancer's page: where to send requests (with a curl to copy) instead of queue URLs and job counts. */
function LbOverview({ ep }: { ep: Endpoint }) {
  const base = 'base' in ep.requestUrls ? ep.requestUrls.base : ''
  const curl = `curl -H "Authorization: Bearer $HANGAR_API_KEY" ${base}/`
  return (
    <div class="grid">
      <Facts ep={ep} />
      <div>
        <h2>Base URL</h2>
        <p class="muted">
          Every method and path under it goes to a ready worker's port; the API key is checked and not passed on.
        </p>
        <Urls urls={ep.requestUrls} />
        <h2>Try it</h2>
        <div class="copyable">
          <pre class="json curl">{curl}</pre>
          <CopyButton text={curl} />
        </div>
      </div>
    </div>
  )
}
