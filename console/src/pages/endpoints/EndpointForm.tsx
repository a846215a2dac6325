import { useState } from 'preact/hooks'
import type { CpuList, GpuList } from '../../../../src/contract/catalog.js'
import type { CreateEndpoint, Endpoint, Flashboot, UpdateEndpoint } from '../../../../src/contract/endpoint.js'
import type { NetworkVolumeList } from '../../../../src/contract/networkVolume.js'
import type { Template, TemplateList } from '../../../../src/contract/template.js'
import { useSession } from '../../session.js'
import { checkedOf, Field, Problems, useAction, useLoad, inputValue } from '../../ui.js'

/** Every field the form shows; server errors on other paths are listed above it. */
const FIELDS = [
  'name',
  'type',
  'templateId',
  'image',
  'args',
  'cpu',
  'gpu',
  'workers',
  'scaling',
  'flashboot',
  'env',
  'networkVolumes',
  'timeout',
]

/** Env keys a load balancer's form shows as fields of their own. */
const LB_ENV = { port: 'PORT', portHealth: 'PORT_HEALTH', healthPath: 'HEALTH_CHECK_PATH' } as const

interface FormState {
  name: string
  type: 'QUEUE' | 'LOAD_BALANCER'
  port: string
  portHealth: string
  healthPath: string
  source: 'template' | 'image'
  templateId: string
  image: string
  args: string
  compute: 'cpu' | 'gpu'
  cpuId: string
  vcpuCount: string
  gpuPools: string[]
  gpuCount: string
  workersMin: string
  workersMax: string
  idleTimeout: string
  scalingType: 'QUEUE_DELAY' | 'REQUEST_COUNT'
  scalingValue: string
  flashboot: Flashboot
  env: string
  networkVolume: string
  timeout: string
}

function initial(e?: Endpoint): FormState {
  const lb = e?.type === 'LOAD_BALANCER'
  const shown = (k: string) => !lb || !(Object.values(LB_ENV) as string[]).includes(k)
  return {
    name: e?.name ?? '',
    type: e?.type ?? 'QUEUE',
    port: (lb && e?.env.PORT) || '',
    portHealth: (lb && e?.env.PORT_HEALTH) || '',
    healthPath: (lb && e?.env.HEALTH_CHECK_PATH) || '',
    source: e ? 'image' : 'template',
    templateId: 'hangar-echo',
    image: e?.image ?? '',
    args: e?.args ?? '',
    compute: e?.gpu ? 'gpu' : 'cpu',
    cpuId: e?.cpu?.[0]?.id ?? 'cpu3c',
    vcpuCount: String(e?.cpu?.[0]?.vcpuCount ?? 2),
    gpuPools: e?.gpu?.pools ?? [],
    gpuCount: String(e?.gpu?.count ?? 1),
    workersMin: String(e?.workers.min ?? 0),
    workersMax: String(e?.workers.max ?? 2),
    idleTimeout: e?.workers.idleTimeout !== undefined ? String(e.workers.idleTimeout) : '',
    scalingType: e?.scaling.type ?? 'QUEUE_DELAY',
    scalingValue: e ? String(e.scaling.type === 'QUEUE_DELAY' ? e.scaling.queueDelay : e.scaling.requestCount) : '4',
    flashboot: e?.flashboot ?? 'OFF',
    env: e
      ? Object.entries(e.env)
          .filter(([k]) => shown(k))
          .map(([k, v]) => `${k}=${v}`)
          .join('\n')
      : '',
    networkVolume: e?.networkVolumes[0] ?? '',
    timeout: e ? String(e.timeout) : '',
  }
}

/** A number typed in a field; an unparsable one is passed as is so the server names the field and rule. */
const num = (s: string): number => (s.trim() === '' ? NaN : Number(s))
const optionalNum = (s: string): number | undefined => (s.trim() === '' ? undefined : num(s))

function envOf(text: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const line of text.split('\n')) {
    const t = line.trim()
    if (!t) continue
    const i = t.indexOf('=')
    env[i < 0 ? t : t.slice(0, i)] = i < 0 ? '' : t.slice(i + 1)
  }
  return env
}

/** The env textarea, plus a load balancer's port and health settings where given. */
function fullEnv(f: FormState): Record<string, string> {
  const env = envOf(f.env)
  if (f.type === 'LOAD_BALANCER')
    for (const [k, name] of Object.entries(LB_ENV))
      if (f[k as keyof typeof LB_ENV].trim()) env[name] = f[k as keyof typeof LB_ENV].trim()
  return env
}

function scalingOf(f: FormState): CreateEndpoint['scaling'] {
  return f.scalingType === 'QUEUE_DELAY' && f.type === 'QUEUE'
    ? { type: 'QUEUE_DELAY', queueDelay: num(f.scalingValue) }
    : { type: 'REQUEST_COUNT', requestCount: num(f.scalingValue) }
}

function workersOf(f: FormState): NonNullable<CreateEndpoint['workers']> {
  const idle = optionalNum(f.idleTimeout)
  return { min: num(f.workersMin), max: num(f.workersMax), ...(idle !== undefined ? { idleTimeout: idle } : {}) }
}

function createBody(f: FormState): CreateEndpoint {
  const body: CreateEndpoint = {
    name: f.name,
    type: f.type,
    workers: workersOf(f),
    scaling: scalingOf(f),
    flashboot: f.flashboot,
  }
  if (f.source === 'template') body.templateId = f.templateId
  else body.image = f.image
  if (f.args.trim()) body.args = f.args
  if (f.compute === 'cpu') body.cpu = [{ id: f.cpuId, vcpuCount: num(f.vcpuCount) }]
  else body.gpu = { pools: f.gpuPools, count: num(f.gpuCount) }
  const env = fullEnv(f)
  if (Object.keys(env).length) body.env = env
  if (f.networkVolume) body.networkVolumes = [f.networkVolume]
  const timeout = optionalNum(f.timeout)
  if (timeout !== undefined) body.timeout = timeout
  return body
}

/** Only what changed, so an edit makes a release only when the workers' program changes. */
function updateBody(f: FormState, e: Endpoint): UpdateEndpoint {
  const was = initial(e)
  const body: UpdateEndpoint = {}
  if (f.name !== was.name) body.name = f.name
  if (f.image !== was.image) body.image = f.image
  if (f.args !== was.args) body.args = f.args
  if (JSON.stringify(fullEnv(f)) !== JSON.stringify(fullEnv(was))) body.env = fullEnv(f)
  if (f.workersMin !== was.workersMin || f.workersMax !== was.workersMax || f.idleTimeout !== was.idleTimeout)
    body.workers = workersOf(f)
  if (f.scalingType !== was.scalingType || f.scalingValue !== was.scalingValue) body.scaling = scalingOf(f)
  if (f.flashboot !== was.flashboot) body.flashboot = f.flashboot
  if (f.timeout !== was.timeout) body.timeout = num(f.timeout)
  if (f.compute === 'cpu' && (f.cpuId !== was.cpuId || f.vcpuCount !== was.vcpuCount))
    body.cpu = [{ id: f.cpuId, vcpuCount: num(f.vcpuCount) }]
  if (f.compute === 'gpu' && (f.gpuPools.join() !== was.gpuPools.join() || f.gpuCount !== was.gpuCount))
    body.gpu = { pools: f.gpuPools, count: num(f.gpuCount) }
  if (f.networkVolume !== was.networkVolume) body.networkVolumes = f.networkVolume ? [f.networkVolume] : []
  return body
}

/**
 * Create (from a template or an image) or edit an endpoint. Nothing is checked here beyond what the
 * inputs allow: the server's validation answers, and each of its errors is shown beside its field.
 */
export function EndpointForm({ endpoint, onSaved }: { endpoint?: Endpoint; onSaved: (e: Endpoint) => void }) {
  const { client } = useSession()
  const [f, setF] = useState<FormState>(() => initial(endpoint))
  const set = <K extends keyof FormState>(k: K, v: FormState[K]) => setF((s) => ({ ...s, [k]: v }))
  const templates = useLoad(async (signal) => {
    const [official, own] = await Promise.all([
      client.get<TemplateList>('/v2/catalog/templates', signal),
      client.get<TemplateList>('/v2/templates', signal),
    ])
    return [...official.templates, ...own.templates].filter((t: Template) => t.serverless)
  }, [])
  const cpus = useLoad((signal) => client.get<CpuList>('/v2/catalog/cpus', signal), [])
  const gpus = useLoad((signal) => client.get<GpuList>('/v2/catalog/gpus', signal), [])
  const volumes = useLoad((signal) => client.get<NetworkVolumeList>('/v2/network-volumes', signal), [])
  const pools = [
    ...new Set((gpus.data?.gpus ?? []).map((g) => g.pool).filter((p): p is string => typeof p === 'string')),
  ].sort()
  const save = useAction(async () => {
    const saved = endpoint
      ? await client.patch<Endpoint>(`/v2/serverless/${endpoint.id}`, updateBody(f, endpoint))
      : await client.post<Endpoint>('/v2/serverless', createBody(f))
    onSaved(saved)
  })
  const err = save.error
  const onInput = (k: keyof FormState) => (e: Event) => set(k, inputValue(e) as never)
  const input = (k: keyof FormState, type: 'text' | 'number' = 'text') =>
    type === 'number' ? (
      <input type="number" name={k} value={f[k] as string} onInput={onInput(k)} />
    ) : (
      <input type="text" name={k} value={f[k] as string} onInput={onInput(k)} />
    )

  return (
    <form
      class="form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault()
        void save.run()
      }}
    >
      {[templates, cpus, gpus, volumes].map((l, i) => (
        <Problems key={i} error={l.error} />
      ))}
      <Problems error={err} fields={FIELDS} />
      <Field label="Name" name="name" error={err}>
        {input('name')}
      </Field>
      {!endpoint && (
        <fieldset class="choice" data-field="type">
          <legend>Type</legend>
          <label class="inline">
            <input
              type="radio"
              name="type"
              checked={f.type === 'QUEUE'}
              onChange={() => setF((s) => ({ ...s, type: 'QUEUE', scalingType: 'QUEUE_DELAY' }))}
            />{' '}
            Queue (jobs through /run)
          </label>
          <label class="inline">
            <input
              type="radio"
              name="type"
              checked={f.type === 'LOAD_BALANCER'}
              onChange={() =>
                setF((s) => ({
                  ...s,
                  type: 'LOAD_BALANCER',
                  scalingType: 'REQUEST_COUNT',
                  source: 'image',
                  image: s.image || 'hangar/http:latest',
                }))
              }
            />{' '}
            Load balancer (HTTP to the workers)
          </label>
        </fieldset>
      )}
      {!endpoint && (
        <fieldset class="choice">
          <legend>Program</legend>
          <label class="inline">
            <input
              type="radio"
              name="source"
              checked={f.source === 'template'}
              onChange={() => set('source', 'template')}
            />{' '}
            From a template
          </label>
          <label class="inline">
            <input type="radio" name="source" checked={f.source === 'image'} onChange={() => set('source', 'image')} />{' '}
            From an image
          </label>
        </fieldset>
      )}
      {f.source === 'template' ? (
        <Field label="Template" name="templateId" error={err}>
          <select name="templateId" value={f.templateId} onChange={(e) => set('templateId', inputValue(e))}>
            {(templates.data ?? []).map((t) => (
              <option key={t.id} value={t.id}>
                {t.name} ({t.image})
              </option>
            ))}
          </select>
        </Field>
      ) : (
        <Field
          label="Image"
          name="image"
          error={err}
          hint="e.g. hangar/echo:latest or an image mapped to a local command"
        >
          {input('image')}
        </Field>
      )}
      <Field label="Command (args)" name="args" error={err} hint="optional: overrides the image's command">
        {input('args')}
      </Field>
      <fieldset class="choice">
        <legend>Compute</legend>
        <label class="inline">
          <input type="radio" name="compute" checked={f.compute === 'cpu'} onChange={() => set('compute', 'cpu')} /> CPU
        </label>
        <label class="inline">
          <input type="radio" name="compute" checked={f.compute === 'gpu'} onChange={() => set('compute', 'gpu')} /> GPU
        </label>
      </fieldset>
      {f.compute === 'cpu' ? (
        <Field label="CPU flavor and vCPUs" name="cpu" error={err}>
          <div class="row">
            <select name="cpuId" value={f.cpuId} onChange={(e) => set('cpuId', inputValue(e))}>
              {(cpus.data?.cpus ?? []).map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name} ({c.id})
                </option>
              ))}
            </select>
            {input('vcpuCount', 'number')}
          </div>
        </Field>
      ) : (
        <Field label="GPU pools and GPUs per worker" name="gpu" error={err}>
          <div class="checks">
            {pools.map((p) => (
              <label class="inline" key={p}>
                <input
                  type="checkbox"
                  checked={f.gpuPools.includes(p)}
                  onChange={(e) =>
                    set('gpuPools', checkedOf(e) ? [...f.gpuPools, p] : f.gpuPools.filter((x) => x !== p))
                  }
                />{' '}
                {p}
              </label>
            ))}
          </div>
          {input('gpuCount', 'number')}
        </Field>
      )}
      <Field label="Workers: min, max, idle timeout (s)" name="workers" error={err}>
        <div class="row">
          {input('workersMin', 'number')}
          {input('workersMax', 'number')}
          {input('idleTimeout', 'number')}
        </div>
      </Field>
      {f.type === 'LOAD_BALANCER' && (
        <>
          <Field
            label="Port"
            name="env.PORT"
            error={err}
            hint="the port the worker's HTTP server listens on (default 80)"
          >
            {input('port', 'number')}
          </Field>
          <Field
            label="Health port"
            name="env.PORT_HEALTH"
            error={err}
            hint="where health checks go (default: the port above)"
          >
            {input('portHealth', 'number')}
          </Field>
          <Field
            label="Health path"
            name="env.HEALTH_CHECK_PATH"
            error={err}
            hint="200 ready, 204 still starting (default /ping)"
          >
            {input('healthPath')}
          </Field>
        </>
      )}
      {f.type === 'LOAD_BALANCER' ? (
        <Field
          label="Requests per worker"
          name="scaling"
          error={err}
          hint="a worker is added for each this many requests in flight or waiting"
        >
          {input('scalingValue', 'number')}
        </Field>
      ) : (
        <Field
          label="Scaling"
          name="scaling"
          error={err}
          hint={f.scalingType === 'QUEUE_DELAY' ? 'seconds a job may wait before a worker is added' : 'jobs per worker'}
        >
          <div class="row">
            <select
              name="scalingType"
              value={f.scalingType}
              onChange={(e) => set('scalingType', inputValue<FormState['scalingType']>(e))}
            >
              <option value="QUEUE_DELAY">Queue delay</option>
              <option value="REQUEST_COUNT">Request count</option>
            </select>
            {input('scalingValue', 'number')}
          </div>
        </Field>
      )}
      <Field label="FlashBoot" name="flashboot" error={err}>
        <select name="flashboot" value={f.flashboot} onChange={(e) => set('flashboot', inputValue<Flashboot>(e))}>
          <option value="OFF">Off</option>
          <option value="FLASHBOOT">FlashBoot</option>
          <option value="PRIORITY_FLASHBOOT">Priority FlashBoot</option>
        </select>
      </Field>
      <Field label="Environment (KEY=value per line)" name="env" error={err}>
        <textarea name="env" rows={3} value={f.env} onInput={(e) => set('env', inputValue(e))} />
      </Field>
      <Field label="Network volume" name="networkVolumes" error={err}>
        <select name="networkVolume" value={f.networkVolume} onChange={(e) => set('networkVolume', inputValue(e))}>
          <option value="">None</option>
          {(volumes.data?.networkVolumes ?? []).map((v) => (
            <option key={v.id} value={v.id}>
              {v.name} ({v.dataCenter}, {v.size} GB)
            </option>
          ))}
        </select>
      </Field>
      <Field label="Execution timeout (ms)" name="timeout" error={err} hint="default 300000">
        {input('timeout', 'number')}
      </Field>
      <div class="form-actions">
        <button class="primary" type="submit" disabled={save.busy}>
          {endpoint ? 'Save changes' : 'Create endpoint'}
        </button>
      </div>
    </form>
  )
}
