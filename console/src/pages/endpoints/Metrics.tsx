import { useState } from 'preact/hooks'
import type { Endpoint } from '../../../../src/contract/endpoint.js'
import type { EndpointMetrics, MetricsWindow } from '../../../../src/contract/metrics.js'
import { useSession } from '../../session.js'
import { TimeChart } from '../../TimeChart.js'
import { Loading, useLoad } from '../../ui.js'

const WINDOWS: Array<{ id: MetricsWindow; label: string }> = [
  { id: 'hour', label: 'Last hour' },
  { id: 'day', label: 'Last day' },
  { id: 'week', label: 'Last week' },
]
const C = {
  ok: '#12b76a',
  bad: '#f04438',
  warn: '#f79009',
  grey: '#98a2b3',
  p50: '#2f5bea',
  p95: '#7a5af8',
  p99: '#ee46bc',
  blue: '#2e90fa',
}

/** The endpoint's metrics as charts over a chosen window, refreshed every 10 s. */
export function Metrics({ ep }: { ep: Endpoint }) {
  const { client } = useSession()
  const [span, setSpan] = useState<MetricsWindow>('hour')
  const { data, error } = useLoad(
    (signal) => client.get<EndpointMetrics>(`/v2/serverless/${ep.id}/metrics?window=${span}`, signal),
    [ep.id, span],
    10_000,
  )
  const lb = ep.type === 'LOAD_BALANCER'
  return (
    <div class="metrics">
      <div class="segmented" role="group" aria-label="Window">
        {WINDOWS.map((w) => (
          <button
            key={w.id}
            type="button"
            class={w.id === span ? 'active' : ''}
            aria-pressed={w.id === span}
            onClick={() => setSpan(w.id)}
          >
            {w.label}
          </button>
        ))}
      </div>
      {!data ? <Loading error={error} what="metrics" /> : lb ? <LbCharts m={data} /> : <QueueCharts m={data} />}
    </div>
  )
}

function Totals({ items }: { items: Array<[string, number]> }) {
  return (
    <dl class="stats">
      {items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  )
}

const per = (m: EndpointMetrics) =>
  m.intervalSeconds === 60
    ? 'per minute'
    : m.intervalSeconds === 3600
      ? 'per hour'
      : `per ${m.intervalSeconds / 60} minutes`

function QueueCharts({ m }: { m: EndpointMetrics }) {
  const t = m.times
  const idle = 'No jobs finished in this window yet: run one from the “Run a job” tab.'
  return (
    <>
      <Totals
        items={[
          ['Completed', m.totals.completed],
          ['Failed', m.totals.failed],
          ['Cancelled', m.totals.cancelled],
          ['Timed out', m.totals.timedOut],
          ['Cold starts', m.totals.coldStarts],
        ]}
      />
      <div class="charts">
        <TimeChart
          title={`Requests ${per(m)}`}
          times={t}
          bars
          empty={idle}
          series={[
            { label: 'completed', values: m.jobs.completed, color: C.ok },
            { label: 'failed', values: m.jobs.failed, color: C.bad },
            { label: 'cancelled', values: m.jobs.cancelled, color: C.grey },
            { label: 'timed out', values: m.jobs.timedOut, color: C.warn },
          ]}
        />
        <TimeChart title="Execution time" unit="ms" times={t} empty={idle} series={pct(m.executionMs)} />
        <TimeChart title="Delay time (in the queue)" unit="ms" times={t} empty={idle} series={pct(m.delayMs)} />
        <ColdStarts m={m} />
        <WorkersChart m={m} />
        <TimeChart
          title="Queue depth"
          times={t}
          empty="No job waited in this window."
          series={[{ label: 'waiting jobs', values: m.queueDepth, color: C.warn }]}
        />
      </div>
    </>
  )
}

function LbCharts({ m }: { m: EndpointMetrics }) {
  const t = m.times
  const idle = 'No requests in this window yet: call the base URL (see Overview).'
  return (
    <>
      <Totals
        items={[
          ['Requests', m.totals.requests],
          ['Cold starts', m.totals.coldStarts],
        ]}
      />
      <div class="charts">
        <TimeChart
          title={`Requests ${per(m)} by status`}
          times={t}
          bars
          empty={idle}
          series={[
            { label: '2xx', values: m.requests.status2xx, color: C.ok },
            { label: '3xx', values: m.requests.status3xx, color: C.blue },
            { label: '4xx', values: m.requests.status4xx, color: C.warn },
            { label: '5xx', values: m.requests.status5xx, color: C.bad },
          ]}
        />
        <TimeChart
          title="Latency through the proxy"
          unit="ms"
          times={t}
          empty={idle}
          series={pct(m.requests.latencyMs)}
        />
        <ColdStarts m={m} />
        <WorkersChart m={m} />
      </div>
    </>
  )
}

function ColdStarts({ m }: { m: EndpointMetrics }) {
  return (
    <>
      <TimeChart
        title="Cold starts"
        times={m.times}
        bars
        empty="No worker started in this window."
        series={[{ label: 'cold starts', values: m.coldStarts.count, color: C.blue }]}
      />
      <TimeChart
        title="Cold start duration"
        unit="ms"
        times={m.times}
        empty="No worker started in this window."
        series={pct(m.coldStarts.durationMs).slice(0, 2)}
      />
    </>
  )
}

function WorkersChart({ m }: { m: EndpointMetrics }) {
  return (
    <TimeChart
      title="Workers (average over each interval)"
      times={m.times}
      empty="No workers ran in this window."
      series={[
        { label: 'running', values: m.workers.running, color: C.ok },
        { label: 'idle', values: m.workers.idle, color: C.blue },
        { label: 'throttled', values: m.workers.throttled, color: C.warn },
      ]}
    />
  )
}

function pct(p: EndpointMetrics['executionMs']) {
  return [
    { label: 'p50', values: p.p50, color: C.p50 },
    { label: 'p95', values: p.p95, color: C.p95 },
    { label: 'p99', values: p.p99, color: C.p99 },
  ]
}
