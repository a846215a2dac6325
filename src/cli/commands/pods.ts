import { InvalidArgumentError, Option, type Command } from 'commander'
import type { CreatePod, Pod, PodAction } from '../../contract/pod.js'
import {
  clientCommand,
  clientFor,
  collect,
  collectEnv,
  intOption,
  readJsonObject,
  type ClientOptions,
} from '../clientCommand.js'
import { print, type Column } from '../output.js'

const columns: Column<Pod>[] = [
  { header: 'id', value: (p) => p.id },
  { header: 'name', value: (p) => p.name },
  { header: 'status', value: (p) => p.status },
  {
    header: 'machine',
    value: (p) => (p.gpu ? `${p.gpu.count} x ${p.gpu.id}` : p.cpu ? `${p.cpu.id} ${p.cpu.vcpuCount} vCPU` : ''),
  },
  { header: 'image', value: (p) => p.image },
  {
    header: 'ports',
    value: (p) => (p.runtime?.ports ?? []).map((x) => `${x.private}/${x.type}->${x.public ?? '-'}`).join(' '),
  },
  { header: 'usd/h', value: (p) => p.cost },
  { header: 'uptime s', value: (p) => p.runtime?.uptime ?? '' },
]

interface CreateFlags extends ClientOptions {
  body?: string
  name?: string
  template?: string
  image?: string
  args?: string
  env?: Record<string, string>
  port?: string[]
  disk?: number
  gpu?: string
  gpuCount?: number
  cpu?: string
  persistent?: string
  networkVolume?: string
  dataCenter?: string[]
  ssh?: boolean
  jupyter?: boolean
}

/** `<a>:<b>`, as in `cpu3c:2`, `20:/workspace`, `vol_x:/data`. */
function pair(v: string, what: string): [string, string] {
  const at = v.indexOf(':')
  if (at <= 0 || at === v.length - 1) throw new InvalidArgumentError(`expected ${what}.`)
  return [v.slice(0, at), v.slice(at + 1)]
}

/** `ghcr.io/acme/trainer:1.4` -> `trainer`. */
function imageName(image: string | undefined): string | undefined {
  return image?.split('@')[0].split('/').pop()?.split(':')[0] || undefined
}

/** The create body: --body first, then each flag given overrides its field. */
function createBody(o: CreateFlags): CreatePod {
  const body: Record<string, unknown> = o.body ? readJsonObject(o.body, '--body') : {}
  const set = (k: string, v: unknown) => v !== undefined && (body[k] = v)
  set('name', o.name)
  set('templateId', o.template)
  // A name by default: the template's id, else the image's name (`hangar/pod:latest` -> `pod`).
  if (body.name === undefined) {
    const from =
      o.template ??
      (typeof body.templateId === 'string' ? body.templateId : undefined) ??
      imageName(o.image ?? (typeof body.image === 'string' ? body.image : undefined))
    if (from) body.name = from
  }
  set('image', o.image)
  set('args', o.args)
  set('env', o.env)
  set('ports', o.port)
  set('disk', o.disk)
  set('dataCenterIds', o.dataCenter)
  if (o.gpu) body.gpu = { id: o.gpu, ...(o.gpuCount ? { count: o.gpuCount } : {}) }
  if (o.cpu) {
    const [id, vcpus] = pair(o.cpu, 'FLAVOR:VCPUS, e.g. cpu3c:2')
    body.cpu = { id, vcpuCount: Number(vcpus) }
  }
  if (o.persistent) {
    const [size, path] = pair(o.persistent, 'SIZE_GB:PATH, e.g. 20:/workspace')
    body.mounts = { persistent: { size: Number(size), path } }
  }
  if (o.networkVolume) {
    const [volumeId, path] = pair(o.networkVolume, 'VOLUME_ID:PATH')
    body.mounts = { network: [{ volumeId, path }] }
  }
  if (o.ssh) body.startSsh = true
  if (o.jupyter) body.startJupyter = true
  return body as CreatePod
}

/** `hangar pods`: pods, their actions and logs. */
export function registerPods(program: Command): void {
  const group = program
    .command('pods')
    .description('pods: long-running GPU or CPU machines you start, stop and reach on their ports')
  clientCommand(group, 'list', 'list your pods')
    .option('--include-cluster-pods', 'also list the members of clusters')
    .action(async (opts: ClientOptions & { includeClusterPods?: boolean }) => {
      const pods = await clientFor(opts).listPods(opts.includeClusterPods)
      print(opts, { pods }, { rows: pods, columns, empty: 'no pods' })
    })
  clientCommand(group, 'get <id>', 'show a pod (status, ports, cost, live metrics)').action(
    async (id: string, opts: ClientOptions) => {
      print(opts, await clientFor(opts).getPod(id))
    },
  )
  clientCommand(group, 'create', 'create a pod (give --gpu or --cpu; --image or --template)')
    .option('--body <json>', 'the request body as JSON, @file or - (stdin); the flags below override its fields')
    .option('--name <name>', 'pod name (default: the template id, else the image name)')
    .option('--template <id>', 'pod template to take image, ports, env, disk and mount from (e.g. hangar-pod)')
    .option('--image <image>', 'container image (hangar/pod is the sample pod program)')
    .option('--args <command>', 'the command as one string')
    .option('--env <KEY=VALUE>', 'environment variable (repeatable)', collectEnv)
    .option('--port <port/proto>', 'port to expose, e.g. 8888/http or 22/tcp (repeatable)', collect)
    .option('--disk <gb>', 'container disk, GB (wiped on every start)', intOption)
    .option('--gpu <type>', 'GPU type id, e.g. "NVIDIA L4" (see hangar catalog gpus)')
    .option('--gpu-count <n>', 'GPUs of that type', intOption)
    .option('--cpu <flavor:vcpus>', 'CPU flavor and vCPU count, e.g. cpu3c:2 (see hangar catalog cpus)')
    .option('--persistent <size:path>', 'persistent disk kept across stop/start, e.g. 20:/workspace (GPU pods)')
    .option('--network-volume <id:path>', 'network volume to mount, e.g. vol_abc:/data')
    .option('--data-center <id>', 'acceptable data center (repeatable)', collect)
    .option('--ssh', "inject PUBLIC_KEY with your account's SSH keys")
    .option('--jupyter', 'inject a generated JUPYTER_PASSWORD')
    .action(async (opts: CreateFlags) => {
      print(opts, await clientFor(opts).createPod(createBody(opts)))
    })
  for (const action of ['start', 'stop', 'restart'] as const satisfies readonly PodAction[]) {
    clientCommand(group, `${action} <id>`, `${action} a pod`).action(async (id: string, opts: ClientOptions) => {
      print(opts, await clientFor(opts).podAction(id, action))
    })
  }
  clientCommand(
    group,
    'terminate <id>',
    'terminate a pod: its program, container disk and persistent disk are gone',
  ).action(async (id: string, opts: ClientOptions) => {
    await clientFor(opts).deletePod(id)
    print(opts, { terminated: id }, () => `terminated ${id}`)
  })
  clientCommand(group, 'logs <id>', "a pod's log lines; with --follow until it is terminated (Ctrl-C to stop)")
    .option('-f, --follow', 'keep printing new lines (Ctrl-C to stop)')
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
        opts: ClientOptions & { follow?: boolean; tail?: number; source?: 'container' | 'system' },
      ) => {
        const ac = new AbortController()
        const stop = () => ac.abort()
        process.once('SIGINT', stop)
        try {
          // Without --follow: the history arrives in one burst, so a short quiet spell means it is all there.
          await clientFor(opts).podLogs(
            id,
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
