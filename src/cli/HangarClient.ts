import type { Account, ApiKey, CreateAccount, CreateApiKey, CreatedApiKey } from '../contract/admin.js'
import type {
  AcceptInvitation,
  CreatedInvitation,
  CreatedMemberKey,
  CreatedSession,
  CreateInvitation,
  CreateMemberKey,
  Invitation,
  Me,
  Member,
  MemberKey,
  Role,
} from '../contract/member.js'
import type { AccountQuotas, SetQuotas } from '../contract/quota.js'
import type {
  CreatedEndpoint,
  CreateEndpoint,
  Endpoint,
  ReleaseList,
  RotatedWebhookSecret,
  UpdateEndpoint,
} from '../contract/endpoint.js'
import type { Health, JobRef, JobRequest, JobStatusView, PurgeResult, StreamView } from '../contract/job.js'
import type { BillingHistory } from '../contract/billing.js'
import type { CpuFlavor, DataCenter, GpuType } from '../contract/catalog.js'
import type { CreateNetworkVolume, NetworkVolume, UpdateNetworkVolume } from '../contract/networkVolume.js'
import type { Cluster, CreateCluster, UpdateCluster } from '../contract/cluster.js'
import type { CreatePod, Pod, PodAction, UpdatePod } from '../contract/pod.js'
import type { Problem } from '../contract/problem.js'
import type { CreateRegistry, Registry } from '../contract/registry.js'
import type { CreateSecret, Secret, UpdateSecret } from '../contract/secret.js'
import type { AuditPage, AuditQuery } from '../contract/audit.js'
import type { SshKeys } from '../contract/sshKeys.js'
import type { CreateTemplate, Template, TemplateSource, UpdateTemplate } from '../contract/template.js'
import type { WorkerList } from '../contract/worker.js'
import type { EndpointMetrics, MetricsWindow } from '../contract/metrics.js'

/** Raised for any non-2xx answer, carrying the problem body. */
export class HangarApiError extends Error {
  constructor(readonly problem: Problem) {
    super(
      `${problem.status} ${problem.title}: ${problem.detail}${problem.errors?.length ? '\n  ' + problem.errors.join('\n  ') : ''}`,
    )
  }
}

/** Raised when the server cannot be reached at all (refused, DNS, reset before an answer). */
export class HangarUnreachableError extends Error {}

/** One line of a worker's log stream. */
export interface LogEvent {
  ts: string
  source: 'container' | 'system'
  line: string
}

/** What a log stream reads: history lines, one source, and when to stop without following. */
export interface LogStreamOptions {
  tail?: number
  source?: 'container' | 'system'
  /** Stop once no line came for this long (reading the history without following). */
  idleMs?: number
  signal?: AbortSignal
}

const enc = encodeURIComponent

/** An audit query as a query string (absent fields left out). */
function auditQuery(q: AuditQuery): string {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v))
  return params.toString()
}

/** A typed client of the Hangar API (management and job operations), used by the CLI. */
export class HangarClient {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
  ) {}

  // quotas (docs/quotas.md): the account's own, and any account's (admin)
  myQuotas(): Promise<AccountQuotas> {
    return this.call('GET', '/v2/account/quotas')
  }
  async listQuotas(): Promise<AccountQuotas[]> {
    return (await this.call<{ accounts: AccountQuotas[] }>('GET', '/v2/admin/quotas')).accounts
  }
  getQuotas(account: string): Promise<AccountQuotas> {
    return this.call('GET', `/v2/admin/accounts/${enc(account)}/quotas`)
  }
  setQuotas(account: string, body: SetQuotas): Promise<AccountQuotas> {
    return this.call('PUT', `/v2/admin/accounts/${enc(account)}/quotas`, body)
  }
  async removeQuotas(account: string): Promise<void> {
    await this.call('DELETE', `/v2/admin/accounts/${enc(account)}/quotas`)
  }

  // accounts and keys (admin)
  createAccount(body: CreateAccount): Promise<Account> {
    return this.call('POST', '/v2/admin/accounts', body)
  }
  async listAccounts(): Promise<Account[]> {
    return (await this.call<{ accounts: Account[] }>('GET', '/v2/admin/accounts')).accounts
  }
  createKey(body: CreateApiKey): Promise<CreatedApiKey> {
    return this.call('POST', '/v2/admin/keys', body)
  }
  async listKeys(account?: string): Promise<ApiKey[]> {
    return (await this.call<{ keys: ApiKey[] }>('GET', `/v2/admin/keys${account ? `?account=${enc(account)}` : ''}`))
      .keys
  }
  revokeKey(id: string): Promise<ApiKey> {
    return this.call('POST', `/v2/admin/keys/${enc(id)}/revoke`, {})
  }

  // serverless endpoints
  async listEndpoints(): Promise<Endpoint[]> {
    return (await this.call<{ endpoints: Endpoint[] }>('GET', '/v2/serverless')).endpoints
  }
  getEndpoint(id: string): Promise<Endpoint> {
    return this.call('GET', `/v2/serverless/${enc(id)}`)
  }
  createEndpoint(body: CreateEndpoint): Promise<CreatedEndpoint> {
    return this.call('POST', '/v2/serverless', body)
  }
  updateEndpoint(id: string, body: UpdateEndpoint): Promise<Endpoint> {
    return this.call('PATCH', `/v2/serverless/${enc(id)}`, body)
  }
  async deleteEndpoint(id: string): Promise<void> {
    await this.call('DELETE', `/v2/serverless/${enc(id)}`)
  }
  /** A new webhook signing secret for the endpoint (shown this once); the old one signs on for the overlap. */
  rotateWebhookSecret(id: string): Promise<RotatedWebhookSecret> {
    return this.call('POST', `/v2/serverless/${enc(id)}/webhook-secret/rotate`)
  }
  releases(id: string): Promise<ReleaseList> {
    return this.call('GET', `/v2/serverless/${enc(id)}/releases`)
  }
  metrics(id: string, window: MetricsWindow = 'hour'): Promise<EndpointMetrics> {
    return this.call('GET', `/v2/serverless/${enc(id)}/metrics?window=${window}`)
  }
  workers(id: string): Promise<WorkerList> {
    return this.call('GET', `/v2/serverless/${enc(id)}/workers`)
  }
  /**
   * Streams a worker's log lines (server-sent events) to `onLine` until the worker ends, `signal` aborts, or
   * (with `idleMs`) no line arrived for that long, which is how "the history, without following" is read.
   */
  workerLogs(id: string, workerId: string, opts: LogStreamOptions, onLine: (e: LogEvent) => void): Promise<void> {
    return this.logStream(`/v2/serverless/${enc(id)}/workers/${enc(workerId)}/logs`, opts, onLine)
  }

  // pods
  async listPods(includeClusterPods = false): Promise<Pod[]> {
    return (await this.call<{ pods: Pod[] }>('GET', `/v2/pods${includeClusterPods ? '?includeClusterPods=true' : ''}`))
      .pods
  }
  getPod(id: string): Promise<Pod> {
    return this.call('GET', `/v2/pods/${enc(id)}`)
  }
  createPod(body: CreatePod): Promise<Pod> {
    return this.call('POST', '/v2/pods', body)
  }
  updatePod(id: string, body: UpdatePod): Promise<Pod> {
    return this.call('PATCH', `/v2/pods/${enc(id)}`, body)
  }
  /** start, stop or restart (the pod after it); terminate answers nothing. */
  async podAction(id: string, action: PodAction): Promise<Pod | null> {
    const r = await this.call<Pod | undefined>('POST', `/v2/pods/${enc(id)}/action`, { action })
    return r ?? null
  }
  async deletePod(id: string): Promise<void> {
    await this.call('DELETE', `/v2/pods/${enc(id)}`)
  }
  /** Streams a pod's log lines (server-sent events) like `workerLogs`; a pod's log ends when it is terminated. */
  podLogs(id: string, opts: LogStreamOptions, onLine: (e: LogEvent) => void): Promise<void> {
    return this.logStream(`/v2/pods/${enc(id)}/logs`, opts, onLine)
  }

  // clusters
  async listClusters(): Promise<Cluster[]> {
    return (await this.call<{ clusters: Cluster[] }>('GET', '/v2/clusters')).clusters
  }
  getCluster(id: string): Promise<Cluster> {
    return this.call('GET', `/v2/clusters/${enc(id)}`)
  }
  createCluster(body: CreateCluster): Promise<Cluster> {
    return this.call('POST', '/v2/clusters', body)
  }
  updateCluster(id: string, body: UpdateCluster): Promise<Cluster> {
    return this.call('PATCH', `/v2/clusters/${enc(id)}`, body)
  }
  async clusterPods(id: string): Promise<Pod[]> {
    return (await this.call<{ pods: Pod[] }>('GET', `/v2/clusters/${enc(id)}/pods`)).pods
  }
  async deleteCluster(id: string): Promise<void> {
    await this.call('DELETE', `/v2/clusters/${enc(id)}`)
  }

  private async logStream(path: string, opts: LogStreamOptions, onLine: (e: LogEvent) => void): Promise<void> {
    const q = new URLSearchParams()
    if (opts.tail !== undefined) q.set('tail', String(opts.tail))
    if (opts.source) q.set('source', opts.source)
    const ac = new AbortController()
    opts.signal?.addEventListener('abort', () => ac.abort(), { once: true })
    const res = await this.fetch('GET', `${path}?${q}`, undefined, ac.signal)
    if (!res.ok) throw await this.problemOf(res)
    let idle: NodeJS.Timeout | undefined
    const armIdle = () => {
      if (opts.idleMs === undefined) return
      clearTimeout(idle)
      idle = setTimeout(() => ac.abort(), opts.idleMs)
    }
    armIdle()
    let buf = ''
    try {
      for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
        buf += chunk
        let at: number
        while ((at = buf.indexOf('\n\n')) >= 0) {
          const event = buf.slice(0, at)
          buf = buf.slice(at + 2)
          const data = event
            .split('\n')
            .filter((l) => l.startsWith('data:'))
            .map((l) => l.slice(5).trimStart())
            .join('\n')
          if (data) {
            onLine(JSON.parse(data) as LogEvent)
            armIdle()
          }
        }
      }
    } catch (err) {
      if (!ac.signal.aborted) throw err
    } finally {
      clearTimeout(idle)
    }
  }

  // templates
  async listTemplates(): Promise<Template[]> {
    return (await this.call<{ templates: Template[] }>('GET', '/v2/templates')).templates
  }
  async catalogTemplates(source: TemplateSource['source'] = 'official'): Promise<Template[]> {
    return (
      await this.call<{ templates: Template[] }>('GET', `/v2/catalog/templates?source=${enc(source ?? 'official')}`)
    ).templates
  }
  getTemplate(id: string): Promise<Template> {
    return this.call('GET', `/v2/templates/${enc(id)}`)
  }
  createTemplate(body: CreateTemplate): Promise<Template> {
    return this.call('POST', '/v2/templates', body)
  }
  updateTemplate(id: string, body: UpdateTemplate): Promise<Template> {
    return this.call('PATCH', `/v2/templates/${enc(id)}`, body)
  }
  async deleteTemplate(id: string): Promise<void> {
    await this.call('DELETE', `/v2/templates/${enc(id)}`)
  }

  // billing
  /** One billing history: `route` is '' for the aggregate, else pods, serverless, network-volumes, clusters. */
  billing(route: string, query: Record<string, string | number | undefined>): Promise<BillingHistory> {
    const qs = new URLSearchParams(
      Object.entries(query)
        .filter((e): e is [string, string | number] => e[1] !== undefined)
        .map(([k, v]) => [k, String(v)]),
    ).toString()
    return this.call('GET', `/v2/billing${route ? `/${route}` : ''}${qs ? `?${qs}` : ''}`)
  }

  // network volumes
  async catalogGpus(): Promise<GpuType[]> {
    return (await this.call<{ gpus: GpuType[] }>('GET', '/v2/catalog/gpus?include=AVAILABILITY&product=POD')).gpus
  }

  async catalogCpus(): Promise<CpuFlavor[]> {
    return (await this.call<{ cpus: CpuFlavor[] }>('GET', '/v2/catalog/cpus?include=AVAILABILITY&product=POD')).cpus
  }

  async catalogDataCenters(): Promise<DataCenter[]> {
    return (await this.call<{ dataCenters: DataCenter[] }>('GET', '/v2/catalog/datacenters')).dataCenters
  }

  async listVolumes(): Promise<NetworkVolume[]> {
    return (await this.call<{ networkVolumes: NetworkVolume[] }>('GET', '/v2/network-volumes')).networkVolumes
  }
  getVolume(id: string): Promise<NetworkVolume> {
    return this.call('GET', `/v2/network-volumes/${enc(id)}`)
  }
  createVolume(body: CreateNetworkVolume): Promise<NetworkVolume> {
    return this.call('POST', '/v2/network-volumes', body)
  }
  updateVolume(id: string, body: UpdateNetworkVolume): Promise<NetworkVolume> {
    return this.call('PATCH', `/v2/network-volumes/${enc(id)}`, body)
  }
  async deleteVolume(id: string): Promise<void> {
    await this.call('DELETE', `/v2/network-volumes/${enc(id)}`)
  }

  // container registry credentials
  async listRegistries(): Promise<Registry[]> {
    return (await this.call<{ registries: Registry[] }>('GET', '/v2/registries')).registries
  }
  getRegistry(id: string): Promise<Registry> {
    return this.call('GET', `/v2/registries/${enc(id)}`)
  }
  createRegistry(body: CreateRegistry): Promise<Registry> {
    return this.call('POST', '/v2/registries', body)
  }
  async deleteRegistry(id: string): Promise<void> {
    await this.call('DELETE', `/v2/registries/${enc(id)}`)
  }

  // secrets of the account (values are write-only)
  async listSecrets(): Promise<Secret[]> {
    return (await this.call<{ secrets: Secret[] }>('GET', '/v2/secrets')).secrets
  }
  getSecret(ref: string): Promise<Secret> {
    return this.call('GET', `/v2/secrets/${enc(ref)}`)
  }
  createSecret(body: CreateSecret): Promise<Secret> {
    return this.call('POST', '/v2/secrets', body)
  }
  updateSecret(ref: string, body: UpdateSecret): Promise<Secret> {
    return this.call('PATCH', `/v2/secrets/${enc(ref)}`, body)
  }
  async deleteSecret(ref: string): Promise<void> {
    await this.call('DELETE', `/v2/secrets/${enc(ref)}`)
  }

  // members, sessions and invitations (docs/teams.md)
  signIn(email: string, password: string): Promise<CreatedSession> {
    return this.call('POST', '/v2/sessions', { email, password })
  }
  async signOut(): Promise<void> {
    await this.call('DELETE', '/v2/sessions/current')
  }
  me(): Promise<Me> {
    return this.call('GET', '/v2/me')
  }
  async listMembers(): Promise<Member[]> {
    return (await this.call<{ members: Member[] }>('GET', '/v2/members')).members
  }
  setMemberRole(id: string, role: Role): Promise<Member> {
    return this.call('PATCH', `/v2/members/${enc(id)}`, { role })
  }
  async removeMember(id: string): Promise<void> {
    await this.call('DELETE', `/v2/members/${enc(id)}`)
  }
  invite(body: CreateInvitation): Promise<CreatedInvitation> {
    return this.call('POST', '/v2/invitations', body)
  }
  async listInvitations(): Promise<Invitation[]> {
    return (await this.call<{ invitations: Invitation[] }>('GET', '/v2/invitations')).invitations
  }
  async revokeInvitation(id: string): Promise<void> {
    await this.call('DELETE', `/v2/invitations/${enc(id)}`)
  }
  acceptInvitation(body: AcceptInvitation): Promise<CreatedSession> {
    return this.call('POST', '/v2/invitations/accept', body)
  }
  createMemberKey(body: CreateMemberKey): Promise<CreatedMemberKey> {
    return this.call('POST', '/v2/me/keys', body)
  }
  async listMemberKeys(): Promise<MemberKey[]> {
    return (await this.call<{ keys: MemberKey[] }>('GET', '/v2/me/keys')).keys
  }
  revokeMemberKey(id: string): Promise<MemberKey> {
    return this.call('POST', `/v2/me/keys/${enc(id)}/revoke`)
  }

  // audit log
  auditPage(query: AuditQuery): Promise<AuditPage> {
    return this.call('GET', `/v2/audit?${auditQuery(query)}`)
  }
  /** Every matching entry as JSON lines (newest first), handed to `write` as they arrive. */
  async exportAudit(query: AuditQuery, write: (chunk: string) => void): Promise<void> {
    const res = await this.fetch('GET', `/v2/audit?${auditQuery({ ...query, format: 'jsonl' })}`)
    if (!res.ok) throw await this.problemOf(res)
    for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) write(chunk)
  }

  // SSH keys of the account
  sshKeys(): Promise<SshKeys> {
    return this.call('GET', '/v2/account/ssh-keys')
  }
  putSshKeys(keys: string[]): Promise<SshKeys> {
    return this.call('PUT', '/v2/account/ssh-keys', { keys })
  }

  // job operations
  run(endpointId: string, body: JobRequest): Promise<JobRef> {
    return this.call('POST', `/v2/${enc(endpointId)}/run`, body)
  }
  runsync(endpointId: string, body: JobRequest, waitMs?: number): Promise<JobStatusView> {
    return this.call('POST', `/v2/${enc(endpointId)}/runsync${waitMs ? `?wait=${waitMs}` : ''}`, body)
  }
  status(endpointId: string, jobId: string, waitMs?: number): Promise<JobStatusView> {
    return waitMs
      ? this.call('GET', `/v2/${enc(endpointId)}/status-sync/${enc(jobId)}?wait=${waitMs}`)
      : this.call('GET', `/v2/${enc(endpointId)}/status/${enc(jobId)}`)
  }
  stream(endpointId: string, jobId: string, waitMs?: number): Promise<StreamView> {
    return this.call('GET', `/v2/${enc(endpointId)}/stream/${enc(jobId)}${waitMs ? `?wait=${waitMs}` : ''}`)
  }
  cancel(endpointId: string, jobId: string): Promise<JobRef> {
    return this.call('POST', `/v2/${enc(endpointId)}/cancel/${enc(jobId)}`)
  }
  retry(endpointId: string, jobId: string): Promise<JobRef> {
    return this.call('POST', `/v2/${enc(endpointId)}/retry/${enc(jobId)}`)
  }
  purgeQueue(endpointId: string): Promise<PurgeResult> {
    return this.call('POST', `/v2/${enc(endpointId)}/purge-queue`)
  }
  health(endpointId: string): Promise<Health> {
    return this.call('GET', `/v2/${enc(endpointId)}/health`)
  }

  private async fetch(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<Response> {
    try {
      return await fetch(this.baseUrl + path, {
        method,
        headers: {
          authorization: `Bearer ${this.apiKey}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal,
      })
    } catch (err) {
      const cause = (err as Error).cause as { code?: string; message?: string } | undefined
      throw new HangarUnreachableError(
        `cannot reach Hangar at ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
      )
    }
  }

  private async problemOf(res: Response): Promise<HangarApiError> {
    const text = await res.text()
    let json: Problem | undefined
    try {
      json = text ? (JSON.parse(text) as Problem) : undefined
    } catch {
      // not a problem document (a proxy's HTML page): show the text
    }
    return new HangarApiError(
      json && typeof json.detail === 'string'
        ? json
        : { title: res.statusText, status: res.status, detail: text || res.statusText },
    )
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await this.fetch(method, path, body)
    if (!res.ok) throw await this.problemOf(res)
    const text = await res.text()
    return (text ? JSON.parse(text) : undefined) as T
  }
}
