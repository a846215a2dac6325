import { useEffect, useRef, useState } from 'preact/hooks'
import type { CpuList, GpuList } from '../../../src/contract/catalog.js'
import type { CreatePod, Pod, PodAction, PodConnections, PodList } from '../../../src/contract/pod.js'
import type { TemplateList } from '../../../src/contract/template.js'
import { LogStream } from '../LogStream.js'
import { useSession } from '../session.js'
import {
  Badge,
  checkedOf,
  CopyButton,
  Field,
  Loading,
  Page,
  Problems,
  useAction,
  useLoad,
  inputValue,
  when,
} from '../ui.js'

const FIELDS = ['name', 'templateId', 'image', 'gpu', 'cpu', 'disk', 'ports', 'env', 'startSsh']

const usdPerHour = (v: number) => `$${v.toFixed(3)}/h`

function computeOf(p: Pod): string {
  if (p.gpu) return `${p.gpu.count} × ${p.gpu.id}`
  if (p.cpu) return `${p.cpu.id} ${p.cpu.vcpuCount} vCPU, ${p.cpu.memory} GB`
  return '—'
}

/** The last samples of each RUNNING pod's CPU and memory use, kept while the page is open. */
type Usage = Array<{ cpu: number; memory: number }>
const SAMPLES = 40

/** A small line of recent values (0-100 %), newest on the right. */
function Spark({ values, label }: { values: number[]; label: string }) {
  const W = 90
  const H = 24
  const last = values[values.length - 1] ?? 0
  const pts = values
    .map(
      (v, i) => `${((i + SAMPLES - values.length) / (SAMPLES - 1)) * W},${H - (Math.min(100, v) / 100) * (H - 2) - 1}`,
    )
    .join(' ')
  return (
    <span class="spark" title={`${label}: ${last} %`}>
      <svg viewBox={`0 0 ${W} ${H}`} width={W} height={H} role="img" aria-label={`${label} ${last} %`}>
        <polyline points={pts} fill="none" stroke="#2f5bea" stroke-width="1.5" />
      </svg>
      <span class="small">
        {label} {last} %
      </span>
    </span>
  )
}

/** Links to the pod's HTTP ports (through the proxy), its SSH command when an SSH server answers, why it failed. */
function Connect({ pod }: { pod: Pod }) {
  const { client } = useSession()
  const { data } = useLoad(
    (signal) => client.get<PodConnections>(`/v2/pods/${pod.id}/connections`, signal),
    [pod.id, pod.status, pod.startedAt],
  )
  if (!data) return null
  const sshMapped = pod.ports.includes('22/tcp')
  return (
    <div class="connect">
      {data.error && (
        <div class="pod-error" role="alert">
          {data.error}
        </div>
      )}
      {data.http.map((h) => (
        <a key={h.port} class="port-link" href={h.url} target="_blank" rel="noreferrer">
          HTTP {h.port} ↗
        </a>
      ))}
      {data.ssh ? (
        <span class="ssh">
          <code>{data.ssh.command}</code> <CopyButton text={data.ssh.command} />
        </span>
      ) : (
        pod.status === 'RUNNING' &&
        sshMapped && <span class="muted small">22/tcp is mapped but no SSH server answers on it</span>
      )}
    </div>
  )
}

/** Pods: list with their cost per hour, the actions valid now, logs, and a create form. */
export function Pods() {
  const { client } = useSession()
  const list = useLoad((signal) => client.get<PodList>('/v2/pods', signal), [], 3000)
  const usage = useRef(new Map<string, Usage>())
  const [, setSamples] = useState(0)
  useEffect(() => {
    for (const p of list.data?.pods ?? []) {
      if (!p.runtime) {
        usage.current.delete(p.id)
        continue
      }
      const u = usage.current.get(p.id) ?? []
      u.push({ cpu: p.runtime.cpu.util, memory: p.runtime.memory.util })
      usage.current.set(p.id, u.slice(-SAMPLES))
    }
    setSamples((n) => n + 1)
  }, [list.data])
  const [logsOf, setLogsOf] = useState<Pod | null>(null)
  const act = useAction(async (p: Pod, action: PodAction) => {
    if (action === 'terminate' && !window.confirm(`Terminate pod ${p.name}? Its disk is deleted.`)) return
    await client.post(`/v2/pods/${p.id}/action`, { action })
    list.reload()
  })
  // Only RUNNING pods are billed for compute: a pod starting or in ERROR holds capacity but costs nothing yet.
  const running = (list.data?.pods ?? []).filter((p) => p.status === 'RUNNING').reduce((sum, p) => sum + p.cost, 0)
  return (
    <Page title="Pods">
      <Problems error={act.error} />
      {!list.data ? (
        <Loading error={list.error} what="pods" />
      ) : list.data.pods.length === 0 ? (
        <p class="empty">No pods.</p>
      ) : (
        <>
          <p class="summary">Running cost now: {usdPerHour(running)}</p>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Status</th>
                  <th>Compute</th>
                  <th>Image</th>
                  <th>Cost</th>
                  <th>Started</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {list.data.pods.map((p) => (
                  <tr key={p.id} class={logsOf?.id === p.id ? 'selected' : ''}>
                    <td>
                      {p.name}
                      <div class="muted mono">{p.id}</div>
                      {(p.status === 'RUNNING' || p.status === 'ERROR') && <Connect pod={p} />}
                    </td>
                    <td>
                      <Badge value={p.status} />
                      {p.runtime && (
                        <div class="usage">
                          <div class="muted small">up {p.runtime.uptime} s</div>
                          <Spark label="CPU" values={(usage.current.get(p.id) ?? []).map((u) => u.cpu)} />
                          <Spark label="Memory" values={(usage.current.get(p.id) ?? []).map((u) => u.memory)} />
                          {p.runtime.gpus.map((g, i) => (
                            <div key={i} class="muted small">
                              GPU {i}: {g.util} %
                            </div>
                          ))}
                        </div>
                      )}
                    </td>
                    <td>{computeOf(p)}</td>
                    <td class="mono">{p.image}</td>
                    <td>
                      {p.status === 'RUNNING' ? (
                        usdPerHour(p.cost)
                      ) : (
                        <span class="muted" title="compute is billed only while RUNNING">
                          not billed
                        </span>
                      )}
                    </td>
                    <td>{when(p.startedAt)}</td>
                    <td class="actions">
                      {p.actions.map((a) => (
                        <button
                          key={a}
                          type="button"
                          class={a === 'terminate' ? 'danger' : ''}
                          disabled={act.busy}
                          onClick={() => void act.run(p, a)}
                        >
                          {a[0].toUpperCase() + a.slice(1)}
                        </button>
                      ))}
                      <button type="button" onClick={() => setLogsOf(p)}>
                        Logs
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      {logsOf && (
        <LogStream
          title={logsOf.name}
          path={`/v2/pods/${logsOf.id}/logs?tail=500`}
          endMessage="pod stopped"
          onClose={() => setLogsOf(null)}
        />
      )}
      <h2>New pod</h2>
      <NewPod onCreated={() => list.reload()} />
    </Page>
  )
}

function NewPod({ onCreated }: { onCreated: () => void }) {
  const { client } = useSession()
  const templates = useLoad(async (signal) => {
    const [official, own] = await Promise.all([
      client.get<TemplateList>('/v2/catalog/templates', signal),
      client.get<TemplateList>('/v2/templates', signal),
    ])
    return [...official.templates, ...own.templates].filter((t) => !t.serverless)
  }, [])
  const gpus = useLoad((signal) => client.get<GpuList>('/v2/catalog/gpus', signal), [])
  const cpus = useLoad((signal) => client.get<CpuList>('/v2/catalog/cpus', signal), [])
  const [f, setF] = useState({
    name: '',
    source: 'image' as 'image' | 'template',
    templateId: '',
    image: '',
    compute: 'cpu' as 'cpu' | 'gpu',
    gpuId: '',
    gpuCount: '1',
    cpuId: 'cpu3c',
    vcpuCount: '2',
    disk: '',
    ports: '',
    env: '',
    startSsh: false,
  })
  const set = (patch: Partial<typeof f>) => setF({ ...f, ...patch })
  const text = (k: 'name' | 'image' | 'disk' | 'ports' | 'gpuCount' | 'vcpuCount') => (
    <input type="text" name={k} value={f[k]} onInput={(e) => set({ [k]: inputValue(e) })} />
  )
  const create = useAction(async () => {
    const num = (s: string) => (s.trim() === '' ? NaN : Number(s))
    const body: CreatePod = { name: f.name, startSsh: f.startSsh }
    if (f.source === 'template') body.templateId = f.templateId
    else body.image = f.image
    if (f.compute === 'gpu') body.gpu = { id: f.gpuId || (gpus.data?.gpus[0]?.id ?? ''), count: num(f.gpuCount) }
    else body.cpu = { id: f.cpuId, vcpuCount: num(f.vcpuCount) }
    if (f.disk.trim()) body.disk = num(f.disk)
    const ports = f.ports.split(/[\s,]+/).filter(Boolean)
    if (ports.length) body.ports = ports
    const env = Object.fromEntries(
      f.env
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .map((l) => (l.includes('=') ? [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] : [l, ''])),
    )
    if (Object.keys(env).length) body.env = env
    await client.post<Pod>('/v2/pods', body)
    set({ name: '' })
    onCreated()
  })
  const err = create.error
  return (
    <form
      class="form"
      noValidate
      onSubmit={(e) => {
        e.preventDefault()
        void create.run()
      }}
    >
      <Problems error={err} fields={FIELDS} />
      <Field label="Name" name="name" error={err}>
        {text('name')}
      </Field>
      <fieldset class="choice">
        <legend>Program</legend>
        <label class="inline">
          <input
            type="radio"
            name="podSource"
            checked={f.source === 'image'}
            onChange={() => set({ source: 'image' })}
          />{' '}
          Image
        </label>
        <label class="inline">
          <input
            type="radio"
            name="podSource"
            checked={f.source === 'template'}
            onChange={() => set({ source: 'template', templateId: f.templateId || (templates.data?.[0]?.id ?? '') })}
          />{' '}
          Template
        </label>
      </fieldset>
      {f.source === 'image' ? (
        <Field label="Image" name="image" error={err}>
          {text('image')}
        </Field>
      ) : (
        <Field label="Template" name="templateId" error={err}>
          <select name="templateId" value={f.templateId} onChange={(e) => set({ templateId: inputValue(e) })}>
            {(templates.data ?? []).map((t) => (
              <option key={t.id} value={t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </Field>
      )}
      <fieldset class="choice">
        <legend>Compute</legend>
        <label class="inline">
          <input
            type="radio"
            name="podCompute"
            checked={f.compute === 'cpu'}
            onChange={() => set({ compute: 'cpu' })}
          />{' '}
          CPU
        </label>
        <label class="inline">
          <input
            type="radio"
            name="podCompute"
            checked={f.compute === 'gpu'}
            onChange={() => set({ compute: 'gpu' })}
          />{' '}
          GPU
        </label>
      </fieldset>
      {f.compute === 'gpu' ? (
        <Field label="GPU type and count" name="gpu" error={err}>
          <div class="row">
            <select name="gpuId" value={f.gpuId} onChange={(e) => set({ gpuId: inputValue(e) })}>
              {(gpus.data?.gpus ?? []).map((g) => (
                <option key={g.id} value={g.id}>
                  {g.name} ({g.memory} GB)
                </option>
              ))}
            </select>
            {text('gpuCount')}
          </div>
        </Field>
      ) : (
        <Field label="CPU flavor and vCPUs" name="cpu" error={err}>
          <div class="row">
            <select name="cpuId" value={f.cpuId} onChange={(e) => set({ cpuId: inputValue(e) })}>
              {(cpus.data?.cpus ?? []).map((c) => (
                <option key={c.id} value={c.id}>
                  {c.name}
                </option>
              ))}
            </select>
            {text('vcpuCount')}
          </div>
        </Field>
      )}
      <Field label="Container disk (GB)" name="disk" error={err} hint="default from the template, else 20">
        {text('disk')}
      </Field>
      <Field label="Ports" name="ports" error={err} hint="e.g. 8888/http, 22/tcp">
        {text('ports')}
      </Field>
      <Field label="Environment (KEY=value per line)" name="env" error={err}>
        <textarea name="env" rows={3} value={f.env} onInput={(e) => set({ env: inputValue(e) })} />
      </Field>
      <label class="inline">
        <input type="checkbox" checked={f.startSsh} onChange={(e) => set({ startSsh: checkedOf(e) })} /> Start SSH with
        the account's keys
      </label>
      <div class="form-actions">
        <button class="primary" type="submit" disabled={create.busy}>
          Create pod
        </button>
      </div>
    </form>
  )
}
