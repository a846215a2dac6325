import { InvalidArgumentError, Option, type Command } from 'commander'
import { errorSummary } from '../../services/workers/lastOutput.js'
import type { CreateEndpoint, Endpoint, Release, UpdateEndpoint } from '../../contract/endpoint.js'
import type { Worker } from '../../contract/worker.js'
import type { EndpointMetrics, MetricsWindow } from '../../contract/metrics.js'
import {
  clientCommand,
  clientFor,
  collect,
  collectEnv,
  intOption,
  readJsonObject,
  type ClientOptions,
} from '../clientCommand.js'
import { print, renderObject, renderTable, type Column } from '../output.js'

const columns: Column<Endpoint>[] = [
  { header: 'id', value: (e) => e.id },
  { header: 'name', value: (e) => e.name },
  { header: 'type', value: (e) => e.type },
  { header: 'image', value: (e) => e.image },
  {
    header: 'compute',
    value: (e) =>
      e.gpu
        ? `gpu ${e.gpu.count}x ${e.gpu.pools.join(',')}`
        : (e.cpu ?? []).map((c) => `${c.id}:${c.vcpuCount}`).join(','),
  },
  { header: 'workers', value: (e) => `${e.workers.min}-${e.workers.max}` },
  {
    header: 'scaling',
    value: (e) =>
      e.scaling.type === 'QUEUE_DELAY'
        ? `QUEUE_DELAY ${e.scaling.queueDelay}s`
        : `REQUEST_COUNT ${e.scaling.requestCount}`,
  },
]

const workerColumns: Column<Worker>[] = [
  { header: 'id', value: (w) => w.id },
  { header: 'status', value: (w) => w.status + (w.retiring ? ' (retiring)' : '') },
  { header: 'version', value: (w) => (w.version === null ? null : `${w.version}${w.isStale ? ' (stale)' : ''}`) },
  { header: 'host', value: (w) => w.hostId },
  { header: 'gpu/cpu', value: (w) => w.gpuTypeId ?? (w.cpuFlavorId ? `${w.cpuFlavorId}:${w.vcpuCount}` : null) },
  { header: 'running', value: (w) => w.jobsInProgress },
  { header: 'done', value: (w) => w.jobsDone },
  { header: 'uptime s', value: (w) => w.uptimeSeconds },
  { header: 'last error', value: (w) => errorSummary(w.lastError) },
]

const releaseColumns: Column<Release>[] = [
  { header: 'version', value: (r) => r.version },
  { header: 'id', value: (r) => r.id },
  { header: 'created', value: (r) => r.createdAt },
  { header: 'workers', value: (r) => r.workerCount },
  { header: 'changes', value: (r) => r.diff.map((d) => d.field).join(', ') },
]

/** Flags shared by create and update, turned into body fields. */
interface EndpointFlags extends ClientOptions {
  body?: string
  name?: string
  type?: 'QUEUE' | 'LOAD_BALANCER'
  template?: string
  image?: string
  args?: string
  env?: Record<string, string>
  gpuPool?: string[]
  gpuCount?: number
  cpu?: string[]
  min?: number
  max?: number
  idleTimeout?: number
  scaling?: { type: 'QUEUE_DELAY'; queueDelay: number } | { type: 'REQUEST_COUNT'; requestCount: number }
  flashboot?: 'OFF' | 'FLASHBOOT' | 'PRIORITY_FLASHBOOT'
  timeout?: number
  networkVolume?: string[]
  dataCenter?: string[]
}

function scaling(v: string): NonNullable<EndpointFlags['scaling']> {
  const m = /^(QUEUE_DELAY|REQUEST_COUNT)[:=]([\d.]+)$/.exec(v)
  if (!m) throw new InvalidArgumentError('expected QUEUE_DELAY:<seconds> or REQUEST_COUNT:<requests per worker>.')
  return m[1] === 'QUEUE_DELAY'
    ? { type: 'QUEUE_DELAY', queueDelay: Number(m[2]) }
    : { type: 'REQUEST_COUNT', requestCount: Number(m[2]) }
}

function withEndpointFlags(cmd: Command): Command {
  return cmd
    .option('--body <json>', 'the request body as JSON, @file or - (stdin); the flags below override its fields')
    .option('--name <name>', 'endpoint name')
    .option('--template <id>', 'template to take image, command, env and disk from')
    .option('--image <image>', 'container image (or a sample: hangar/echo, hangar/sleep, hangar/stream, hangar/fail)')
    .option('--args <command>', 'the command as one string')
    .option('--env <KEY=VALUE>', 'environment variable (repeatable)', collectEnv)
    .option('--gpu-pool <pool>', 'GPU pool (repeatable); makes a GPU endpoint', collect)
    .option('--gpu-count <n>', 'GPUs per worker', intOption)
    .option(
      '--cpu <flavor:vcpus>',
      'CPU flavor and vCPU count, e.g. cpu3c:2 (repeatable, in order of preference)',
      collect,
    )
    .option('--min <n>', 'workers.min', intOption)
    .option('--max <n>', 'workers.max', intOption)
    .option('--idle-timeout <seconds>', 'workers.idleTimeout', intOption)
    .option('--scaling <policy>', 'QUEUE_DELAY:<seconds> or REQUEST_COUNT:<n>', scaling)
    .addOption(
      new Option('--flashboot <mode>', 'keep stopped workers warm').choices(['OFF', 'FLASHBOOT', 'PRIORITY_FLASHBOOT']),
    )
    .option('--timeout <ms>', 'per-job execution timeout, ms', intOption)
    .option('--network-volume <id>', 'network volume to mount (repeatable)', collect)
    .option('--data-center <id>', 'data center to place workers in (repeatable)', collect)
}

function bodyOf(opts: EndpointFlags): Record<string, unknown> {
  const body: Record<string, unknown> = opts.body ? readJsonObject(opts.body, '--body') : {}
  const set = (k: string, v: unknown) => {
    if (v !== undefined) body[k] = v
  }
  set('name', opts.name)
  set('type', opts.type)
  set('templateId', opts.template)
  set('image', opts.image)
  set('args', opts.args)
  if (opts.env) body.env = { ...((body.env as object | undefined) ?? {}), ...opts.env }
  if (opts.gpuPool || opts.gpuCount !== undefined) {
    body.gpu = {
      ...((body.gpu as object | undefined) ?? {}),
      ...(opts.gpuPool ? { pools: opts.gpuPool } : {}),
      ...(opts.gpuCount !== undefined ? { count: opts.gpuCount } : {}),
    }
  }
  if (opts.cpu) {
    body.cpu = opts.cpu.map((c) => {
      const m = /^([^:]+):(\d+)$/.exec(c)
      if (!m) throw new InvalidArgumentError(`--cpu ${c}: expected <flavor>:<vcpus>, e.g. cpu3c:2.`)
      return { id: m[1], vcpuCount: Number(m[2]) }
    })
  }
  if (opts.min !== undefined || opts.max !== undefined || opts.idleTimeout !== undefined) {
    const w = { ...((body.workers as object | undefined) ?? {}) } as Record<string, number>
    if (opts.min !== undefined) w.min = opts.min
    if (opts.max !== undefined) w.max = opts.max
    if (opts.idleTimeout !== undefined) w.idleTimeout = opts.idleTimeout
    body.workers = w
  }
  set('scaling', opts.scaling)
  set('flashboot', opts.flashboot)
  set('timeout', opts.timeout)
  set('networkVolumes', opts.networkVolume)
  set('dataCenterIds', opts.dataCenter)
  return body
}

/** `hangar endpoints`: serverless endpoints, their releases, workers and worker logs. */
export function registerEndpoints(program: Command): void {
  const group = program
    .command('endpoints')
    .description('serverless endpoints, their releases, workers and worker logs')
  clientCommand(group, 'list', 'list your endpoints').action(async (opts: ClientOptions) => {
    const list = await clientFor(opts).listEndpoints()
    print(opts, list, { rows: list, columns })
  })
  clientCommand(group, 'get <id>', 'show an endpoint').action(async (id: string, opts: ClientOptions) => {
    print(opts, await clientFor(opts).getEndpoint(id))
  })
  withEndpointFlags(
    clientCommand(group, 'create', 'create an endpoint (type QUEUE and scaling QUEUE_DELAY:4 unless given)'),
  )
    .addOption(new Option('--type <type>', 'endpoint type').choices(['QUEUE', 'LOAD_BALANCER']))
    .addHelpText(
      'after',
      '\nExample:\n  hangar endpoints create --name echo --image hangar/echo --cpu cpu3c:2 --max 2 --scaling QUEUE_DELAY:1',
    )
    .action(async (opts: EndpointFlags) => {
      const body = { type: 'QUEUE', scaling: { type: 'QUEUE_DELAY', queueDelay: 4 }, ...bodyOf(opts) }
      // The server validates the body against the contract and answers every violation.
      print(opts, await clientFor(opts).createEndpoint(body as CreateEndpoint))
    })
  withEndpointFlags(clientCommand(group, 'update <id>', 'change an endpoint (only the fields given)')).action(
    async (id: string, opts: EndpointFlags) => {
      print(opts, await clientFor(opts).updateEndpoint(id, bodyOf(opts) as UpdateEndpoint))
    },
  )
  clientCommand(group, 'delete <id>', 'delete an endpoint, its releases and workers').action(
    async (id: string, opts: ClientOptions) => {
      await clientFor(opts).deleteEndpoint(id)
      print(opts, { deleted: id }, () => `deleted ${id}`)
    },
  )
  clientCommand(
    group,
    'rotate-webhook-secret <id>',
    "replace the secret signing the endpoint's webhooks; the old one signs on for the overlap",
  ).action(async (id: string, opts: ClientOptions) => {
    print(opts, await clientFor(opts).rotateWebhookSecret(id))
  })
  clientCommand(group, 'releases <id>', "an endpoint's releases, newest first, and the rollout").action(
    async (id: string, opts: ClientOptions) => {
      const r = await clientFor(opts).releases(id)
      print(
        opts,
        r,
        () =>
          `${renderObject({ endpointVersion: r.endpointVersion, rollout: `${r.rollout.workersOnLatest}/${r.rollout.workersTotal} workers on latest${r.rollout.inProgress ? ' (in progress)' : ''}` })}\n\n${renderTable(r.releases, releaseColumns)}`,
      )
    },
  )
  clientCommand(group, 'workers <id>', "an endpoint's workers, and why jobs wait").action(
    async (id: string, opts: ClientOptions) => {
      const w = await clientFor(opts).workers(id)
      print(opts, w, () => {
        const parts = [renderTable(w.workers, workerColumns, '(no workers)')]
        if (w.parked.length) parts.push(`parked (FlashBoot):\n${renderTable(w.parked, workerColumns)}`)
        parts.push(
          `waiting jobs: ${w.waiting.jobs} (+${w.waiting.lowPriorityJobs} low priority)${w.waiting.reason ? `: ${w.waiting.reason.code}: ${w.waiting.reason.message}` : ''}`,
        )
        return parts.join('\n\n')
      })
    },
  )
  clientCommand(group, 'metrics <id>', "an endpoint's jobs, times, cold starts, workers and queue per interval")
    .addOption(
      new Option('--window <window>', 'hour (1-minute rows), day (15-minute rows) or week (hourly rows)')
        .choices(['hour', 'day', 'week'])
        .default('hour'),
    )
    .action(async (id: string, opts: ClientOptions & { window: MetricsWindow }) => {
      const m = await clientFor(opts).metrics(id, opts.window)
      print(opts, m, () => renderMetrics(m))
    })
  clientCommand(group, 'logs <id> <workerId>', "a worker's log lines; with --follow until the worker ends")
    .option('-f, --follow', 'keep printing new lines until the worker ends (Ctrl-C to stop)')
    .option('--tail <n>', 'history lines to print first (default 100)', intOption)
    .addOption(
      new Option('--source <source>', 'only container output or only Hangar system lines').choices([
        'container',
        'system',
      ]),
    )
    .action(
      async (
        id: string,
        workerId: string,
        opts: ClientOptions & { follow?: boolean; tail?: number; source?: 'container' | 'system' },
      ) => {
        const ac = new AbortController()
        const stop = () => ac.abort()
        process.once('SIGINT', stop)
        try {
          // Without --follow: the history arrives in one burst, so a short quiet spell means it is all there.
          await clientFor(opts).workerLogs(
            id,
            workerId,
            { tail: opts.tail, source: opts.source, idleMs: opts.follow ? undefined : 1000, signal: ac.signal },
            (e) => {
              process.stdout.write(opts.json ? JSON.stringify(e) + '\n' : `${e.ts} [${e.source}] ${e.line}\n`)
            },
          )
        } finally {
          process.off('SIGINT', stop)
        }
      },
    )
}

/** Totals, then one row per interval that saw anything (an idle window says so in one line). */
export function renderMetrics(m: EndpointMetrics): string {
  const ms = (v: number | null) =>
    v === null ? '-' : v >= 10_000 ? `${(v / 1000).toFixed(0)}s` : v >= 1000 ? `${(v / 1000).toFixed(1)}s` : `${v}ms`
  const rows = m.times
    .map((t, i) => ({ t, i }))
    .filter(
      ({ i }) =>
        m.jobs.completed[i] +
          m.jobs.failed[i] +
          m.jobs.cancelled[i] +
          m.jobs.timedOut[i] +
          m.coldStarts.count[i] +
          m.requests.total[i] >
          0 || m.workers.running[i] + m.workers.idle[i] + m.queueDepth[i] > 0,
    )
  const head = `window: last ${m.window}, one row per ${m.intervalSeconds / 60} min\n${renderObject(m.totals)}`
  if (rows.length === 0) return `${head}\n\n(nothing ran in this window)`
  const columns: Column<{ t: number; i: number }>[] = [
    { header: 'from', value: ({ t }) => new Date(t).toISOString().slice(0, 16).replace('T', ' ') },
    { header: 'done', value: ({ i }) => m.jobs.completed[i] },
    { header: 'failed', value: ({ i }) => m.jobs.failed[i] },
    { header: 'cancel', value: ({ i }) => m.jobs.cancelled[i] },
    { header: 'timeout', value: ({ i }) => m.jobs.timedOut[i] },
    {
      header: 'exec p50/p95/p99',
      value: ({ i }) => [m.executionMs.p50[i], m.executionMs.p95[i], m.executionMs.p99[i]].map(ms).join('/'),
    },
    { header: 'delay p50/p95', value: ({ i }) => [m.delayMs.p50[i], m.delayMs.p95[i]].map(ms).join('/') },
    {
      header: 'cold',
      value: ({ i }) =>
        m.coldStarts.count[i] ? `${m.coldStarts.count[i]} (${ms(m.coldStarts.durationMs.p50[i])})` : 0,
    },
    {
      header: 'workers run/idle/thr',
      value: ({ i }) => `${m.workers.running[i]}/${m.workers.idle[i]}/${m.workers.throttled[i]}`,
    },
    { header: 'queue', value: ({ i }) => m.queueDepth[i] },
  ]
  if (m.totals.requests > 0) {
    columns.push({
      header: 'requests 2/3/4/5xx',
      value: ({ i }) =>
        `${m.requests.total[i]} ${m.requests.status2xx[i]}/${m.requests.status3xx[i]}/${m.requests.status4xx[i]}/${m.requests.status5xx[i]}`,
    })
    columns.push({
      header: 'latency p50/p99',
      value: ({ i }) => [m.requests.latencyMs.p50[i], m.requests.latencyMs.p99[i]].map(ms).join('/'),
    })
  }
  return `${head}\n\n${renderTable(rows, columns)}`
}
