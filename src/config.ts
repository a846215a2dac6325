import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Type, type Static } from 'typebox'
import { Value } from 'typebox/value'
import { CatalogConfig, FleetConfig } from './catalog/config.js'
import { LimitsConfig } from './api/limitsConfig.js'
import { EngineSetting } from './runtime/docker/EngineConfig.js'
import { ImagesConfig } from './runtime/images.js'
import { ProcessRuntimeConfig } from './runtime/process/sandbox.js'
import { KubernetesConfig } from './runtime/kubernetes/KubernetesConfig.js'
import { described } from './described.js'
import { BillingConfig } from './services/billing/billingConfig.js'
import { QuotasConfig } from './services/accounts/quotasConfig.js'
import { MembersConfig } from './services/accounts/membersConfig.js'
import { AuditConfig } from './services/audit/auditConfig.js'
import { JobsConfig } from './services/jobs/jobsConfig.js'
import { LoadBalancerConfig } from './services/loadBalancer/loadBalancerConfig.js'

/**
 * Everything Hangar can be configured with. Sources, later wins: defaults, the JSON config file,
 * environment variables, command-line flags. This is the only module that reads process.env.
 */
export const Config = Type.Object(
  {
    host: Type.String({ default: '127.0.0.1', description: 'Address the server listens on.' }),
    port: Type.Integer({
      minimum: 0,
      maximum: 65535,
      default: 8080,
      description: 'Port the server listens on (0: any free port).',
    }),
    dataDir: Type.String({
      default: './.hangar',
      description:
        'Where Hangar keeps its data: the SQLite database, `secret.key`, `admin-key`, network volumes, work dirs (see docs/operations.md).',
    }),
    publicUrl: Type.Optional(
      Type.String({
        pattern: '^https?://',
        description: 'Externally visible base URL, used to build `requestUrls`; derived from host/port when unset.',
      }),
    ),
    adminApiKey: Type.Optional(
      Type.String({ minLength: 16, description: 'Sets the admin key on first start instead of generating one.' }),
    ),
    logLevel: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      default: 'info',
      description:
        'pino level. `info`: one line per API request, workers starting, stopping and failing, new scaling targets; `debug` adds the worker protocol and every scaling decision.',
    }),
    lockDataDir: Type.Boolean({
      default: true,
      description:
        "Refuse to start while another Hangar uses the data dir (`<dataDir>/hangar.lock`). Off only where two processes must share one SQLite file on purpose (a test of shared rate limits): both then run workers and an autoscaler over the same database, and what the SQLite store keeps in memory because one process owns the file (job counts, queue positions, parsed endpoints) is each process's own. Several processes on one database is what PostgreSQL is for (see docs/postgresql-and-replicas.md).",
    }),
    logFormat: Type.Enum(['auto', 'json', 'pretty'], {
      default: 'auto',
      description: '`auto`: readable lines on a terminal, JSON otherwise; `json` or `pretty` force one.',
    }),
    bodyLimit: Type.Integer({
      minimum: 1024,
      default: 1024 * 1024,
      description: 'Largest management request body, bytes.',
    }),
    limits: LimitsConfig,
    catalog: CatalogConfig,
    fleet: FleetConfig,
    jobs: JobsConfig,
    loadBalancer: LoadBalancerConfig,
    images: ImagesConfig,
    runtime: Type.Object(
      {
        process: described(
          ProcessRuntimeConfig,
          'How local processes are isolated from each other and from the control plane (the bubblewrap sandbox; see docs/security.md).',
        ),
        kubernetes: Type.Optional(KubernetesConfig),
      },
      {
        additionalProperties: false,
        default: {},
        description:
          'How workloads run: `process` says how local processes are isolated from each other and from the control plane (`sandbox`, `trustTenants`); `kubernetes` names a cluster (`{"kubeconfig": "...", "namespace": "hangar"}`) whose Nodes are then the fleet, every worker and pod a Pod there (see docs/kubernetes.md).',
      },
    ),
    engine: Type.Optional(
      described(
        EngineSetting,
        'This machine\'s Docker or Podman engine (`"unix:///var/run/docker.sock"`, or an object with every setting): its workers then run as containers of their endpoint\'s image instead of local processes. Hosts listed in `fleet.hosts` name their own.',
      ),
    ),
    workerUrl: Type.Optional(
      Type.String({
        pattern: '^https?://',
        description: 'Base URL workers reach the control plane at; the address it listens on when unset.',
      }),
    ),
    internalUrl: Type.Optional(
      Type.String({
        pattern: '^https?://',
        description:
          'Base URL the other control-plane replicas reach this one at, when it leads (they forward it load-balancer traffic and pod operations); the address it listens on when unset. Only used with PostgreSQL.',
      }),
    ),
    drainMs: Type.Integer({
      minimum: 0,
      maximum: 600_000,
      default: 0,
      description:
        'When stopping (SIGTERM), how long to go on serving before closing, ms: /readyz answers 503, long-polls are released and every response closes its connection, so clients (workers posting results) reconnect to another replica instead of sending on a connection closed under them. Set it behind a load balancer or in Kubernetes to a little more than the time the orchestrator takes to stop routing to a stopping replica (the manifests in deploy/kubernetes set 5000); 0 closes at once.',
    }),
    enginePingIntervalMs: Type.Integer({
      minimum: 50,
      default: 2_000,
      description:
        'How often each container engine is pinged, ms; one that does not answer marks its host down until it does.',
    }),
    billing: BillingConfig,
    quotas: QuotasConfig,
    audit: AuditConfig,
    members: MembersConfig,
    metricsToken: Type.Optional(
      Type.String({
        minLength: 16,
        description: 'Bearer token Prometheus sends to scrape /metrics; admin keys are accepted too.',
      }),
    ),
    metricsFlushMs: Type.Integer({
      minimum: 100,
      default: 10_000,
      description: 'How often each replica writes the endpoint metrics it counted (1-minute and 1-hour buckets), ms.',
    }),
    databaseUrl: Type.Optional(
      Type.String({
        pattern: '^postgres(ql)?://',
        description:
          'PostgreSQL to keep everything in (`postgres://user:password@host:5432/db`, optionally `?schema=name`); the embedded SQLite file in the data dir when unset.',
      }),
    ),
    databaseSchema: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z_][A-Za-z0-9_]{0,62}$',
        description:
          'The PostgreSQL schema (created if missing; default `public`); a `schema` parameter in databaseUrl wins.',
      }),
    ),
    redisUrl: Type.Optional(
      Type.String({
        pattern: '^rediss?://',
        description: 'Redis for rate-limit counters shared by several control-plane replicas; in memory when unset.',
      }),
    ),
    rateLimits: Type.Object(
      {
        management: Type.Object(
          {
            minute: Type.Integer({ minimum: 1, default: 600, description: 'Requests per account per minute.' }),
            hour: Type.Integer({ minimum: 1, default: 18_000, description: 'Requests per account per hour.' }),
            day: Type.Integer({ minimum: 1, default: 200_000, description: 'Requests per account per day.' }),
          },
          {
            additionalProperties: false,
            default: {},
            description:
              'Management API requests per account per window; admin keys and exempt accounts are not limited.',
          },
        ),
        perWorker: Type.Object(
          {
            rate: Type.Integer({
              minimum: 1,
              default: 500,
              description: 'Requests per 10 s each running worker raises the limits to, at least.',
            }),
            concurrent: Type.Integer({
              minimum: 1,
              default: 100,
              description: 'Concurrent requests each running worker raises the limits to, at least.',
            }),
          },
          {
            additionalProperties: false,
            default: {},
            description:
              "The spec's requests_per_worker: each running worker raises an endpoint's job-operation limits to at least this many requests per 10 s and this many concurrent requests.",
          },
        ),
      },
      {
        additionalProperties: false,
        default: {},
        description: 'Quotas of the management API, and how running workers raise the limits of job operations.',
      },
    ),
  },
  { additionalProperties: false },
)
export type Config = Static<typeof Config>

/** Settings whose environment variable holds a number (a text that is not one is refused with the setting's name). */
const NUMERIC_ENV = new Set(['port', 'drainMs'])

/** Overrides from the command line; undefined fields are left to the other sources. */
export interface ConfigFlags {
  host?: string
  port?: number
  dataDir?: string
  configFile?: string
}

/**
 * The environment variables of settings: a top-level key, or a path below one (`loadBalancer.domain`). The
 * configuration reference (docs/reference/configuration.md) lists them beside their settings.
 */
export const CONFIG_ENV: Record<string, keyof Config | `${keyof Config}.${string}`> = {
  HANGAR_HOST: 'host',
  HANGAR_PORT: 'port',
  HANGAR_DATA_DIR: 'dataDir',
  HANGAR_PUBLIC_URL: 'publicUrl',
  HANGAR_ADMIN_API_KEY: 'adminApiKey',
  HANGAR_LOG_LEVEL: 'logLevel',
  HANGAR_LOG_FORMAT: 'logFormat',
  HANGAR_REDIS_URL: 'redisUrl',
  HANGAR_DATABASE_URL: 'databaseUrl',
  HANGAR_DATABASE_SCHEMA: 'databaseSchema',
  HANGAR_ENGINE: 'engine',
  HANGAR_WORKER_URL: 'workerUrl',
  HANGAR_INTERNAL_URL: 'internalUrl',
  HANGAR_DRAIN_MS: 'drainMs',
  HANGAR_METRICS_TOKEN: 'metricsToken',
  HANGAR_LB_DOMAIN: 'loadBalancer.domain',
}

/** The `hangar serve` flags of settings (`--config FILE` names the config file, as HANGAR_CONFIG does). */
export const CONFIG_FLAGS = { host: '--host', port: '--port', dataDir: '--data-dir' } as const satisfies Partial<
  Record<keyof Config, string>
>

/**
 * HANGAR_ENGINE: an address (`unix:///run/podman/podman.sock`) or the whole engine object as JSON
 * (`{"address": "...", "network": "host", "gpus": "cdi"}`).
 */
function engineFromEnv(v: string, name: string): unknown {
  if (!v.trimStart().startsWith('{')) return v
  try {
    return JSON.parse(v)
  } catch (err) {
    throw new Error(`${name}: not an engine address nor a JSON engine object (${(err as Error).message})`)
  }
}

/** Parses and validates the configuration once; throws with every problem listed. */
export function loadConfig(
  flags: ConfigFlags = {},
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Config> = {},
): Config {
  const raw: Record<string, unknown> = {}
  const file = flags.configFile ?? env.HANGAR_CONFIG
  if (file) {
    try {
      Object.assign(raw, JSON.parse(readFileSync(file, 'utf8')))
    } catch (err) {
      throw new Error(`config file ${file}: ${(err as Error).message}`)
    }
  }
  // Where each top-level field came from, so that an error names what the user actually set.
  const origin: Record<string, string> = {}
  if (file) for (const key of Object.keys(raw)) origin[key] = `${file}: ${key}`
  for (const [name, path] of Object.entries(CONFIG_ENV)) {
    const v = env[name]
    if (v === undefined || v === '') continue
    const [key, sub] = path.split('.')
    if (sub) raw[key] = { ...(raw[key] as object | undefined), [sub]: v }
    else raw[key] = NUMERIC_ENV.has(key) ? Number(v) : key === 'engine' ? engineFromEnv(v, name) : v
    origin[key] = name
  }
  const flag = (key: keyof Config, name: string, v: unknown) => {
    if (v === undefined) return
    raw[key] = v
    origin[key] = name
  }
  flag('host', CONFIG_FLAGS.host, flags.host)
  flag('port', CONFIG_FLAGS.port, flags.port)
  flag('dataDir', CONFIG_FLAGS.dataDir, flags.dataDir)
  Object.assign(raw, overrides)
  return parseConfig(raw, origin)
}

/**
 * Validates a raw configuration object and fills in defaults. `origin` names where top-level fields came
 * from (`HANGAR_ADMIN_API_KEY`, `--port`, `config.json: port`), for the error message.
 */
export function parseConfig(raw: unknown, origin: Record<string, string> = {}): Config {
  const withDefaults = Value.Default(Config, structuredClone(raw ?? {}))
  if (!Value.Check(Config, withDefaults)) {
    const problems = [...Value.Errors(Config, withDefaults)].map((e) => {
      const top = e.instancePath.split('/')[1]
      const from = top !== undefined ? origin[top] : undefined
      return `${from ? `${from} (${e.instancePath})` : e.instancePath || '/'}: ${e.message}`
    })
    throw new Error(`invalid configuration:\n  ${problems.join('\n  ')}`)
  }
  const config = withDefaults as Config
  config.dataDir = resolve(config.dataDir)
  return config
}

/** The base URL clients should use, from `publicUrl` or the address the server listens on. */
export function publicBaseUrl(config: Config, boundPort: number): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/+$/, '')
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  return `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`
}

/** Where CLI commands other than `serve` send their requests, and with which key. */
export interface ClientConfig {
  url: string
  apiKey?: string
  dataDir: string
}

/** Reads the CLI client settings: flags win over HANGAR_URL / HANGAR_API_KEY / HANGAR_DATA_DIR. */
export function loadClientConfig(
  flags: { url?: string; apiKey?: string; dataDir?: string },
  env: NodeJS.ProcessEnv = process.env,
): ClientConfig {
  const port = env.HANGAR_PORT ?? '8080'
  const host = env.HANGAR_HOST ?? '127.0.0.1'
  return {
    url: (flags.url ?? env.HANGAR_URL ?? env.HANGAR_PUBLIC_URL ?? `http://${host}:${port}`).replace(/\/+$/, ''),
    apiKey: flags.apiKey ?? env.HANGAR_API_KEY ?? env.HANGAR_ADMIN_API_KEY,
    dataDir: resolve(flags.dataDir ?? env.HANGAR_DATA_DIR ?? './.hangar'),
  }
}

/** What a local worker process inherits from this host: enough to find programs and speak UTF-8. */
export function workerHostEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const keep = ['PATH', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR', 'SYSTEMROOT']
  return Object.fromEntries(keep.filter((k) => env[k] !== undefined).map((k) => [k, env[k]!]))
}
