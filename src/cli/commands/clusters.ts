import { Option, type Command } from 'commander'
import type { Cluster, CreateCluster } from '../../contract/cluster.js'
import type { Pod } from '../../contract/pod.js'
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

const columns: Column<Cluster>[] = [
  { header: 'id', value: (c) => c.id },
  { header: 'name', value: (c) => c.name },
  { header: 'type', value: (c) => c.type },
  { header: 'pods', value: (c) => `${c.pods.total} x ${c.compute.gpuCountPerPod} ${c.compute.gpuTypeId}` },
  {
    header: 'status',
    value: (c) =>
      Object.entries(c.pods.byStatus)
        .map(([k, v]) => `${v} ${k}`)
        .join(', '),
  },
  { header: 'data center', value: (c) => c.dataCenterId ?? '' },
  { header: 'network', value: (c) => c.network?.cidr ?? '' },
]

const memberColumns: Column<Pod>[] = [
  { header: 'rank', value: (p) => p.cluster?.rank ?? '' },
  { header: 'role', value: (p) => p.cluster?.role ?? '' },
  { header: 'ip', value: (p) => p.cluster?.ip ?? '' },
  { header: 'pod', value: (p) => p.id },
  { header: 'status', value: (p) => p.status },
  { header: 'usd/h', value: (p) => p.cost },
]

interface CreateFlags extends ClientOptions {
  body?: string
  name?: string
  type?: CreateCluster['type']
  gpu?: string
  gpusPerPod?: number
  pods?: number
  image?: string
  args?: string
  env?: Record<string, string>
  port?: string[]
  disk?: number
  dataCenter?: string[]
  ssh?: boolean
  jupyter?: boolean
}

/** `hangar clusters`: instant clusters and their member pods. */
export function registerClusters(program: Command): void {
  const group = program
    .command('clusters')
    .description('instant clusters: several GPU pods placed together and wired for distributed work')
  clientCommand(group, 'list', 'list your clusters').action(async (opts: ClientOptions) => {
    const clusters = await clientFor(opts).listClusters()
    print(opts, { clusters }, { rows: clusters, columns, empty: 'no clusters' })
  })
  clientCommand(group, 'get <id>', 'show a cluster').action(async (id: string, opts: ClientOptions) => {
    print(opts, await clientFor(opts).getCluster(id))
  })
  clientCommand(group, 'pods <id>', "a cluster's members, by rank").action(async (id: string, opts: ClientOptions) => {
    const pods = await clientFor(opts).clusterPods(id)
    print(opts, { pods }, { rows: pods, columns: memberColumns })
  })
  clientCommand(group, 'create', 'create a cluster (all members in one data center, or none)')
    .option('--body <json>', 'the request body as JSON, @file or - (stdin); the flags below override its fields')
    .option('--name <name>', 'cluster name')
    .addOption(new Option('--type <type>', 'what runs on it').choices(['APPLICATION', 'TRAINING', 'SLURM', 'RAY']))
    .option('--gpu <type>', 'GPU type id of every member, e.g. "NVIDIA H100 80GB HBM3"')
    .option('--gpus-per-pod <n>', 'GPUs per member', intOption)
    .option('--pods <n>', 'number of members (2-250)', intOption)
    .option('--image <image>', 'container image of every member (hangar/cluster is the sample)')
    .option('--args <command>', 'the command as one string')
    .option('--env <KEY=VALUE>', 'environment variable (repeatable)', collectEnv)
    .option('--port <port/proto>', 'port to expose on every member (repeatable)', collect)
    .option('--disk <gb>', 'container disk, GB', intOption)
    .option('--data-center <id>', 'acceptable data center (repeatable)', collect)
    .option('--ssh', "inject PUBLIC_KEY with your account's SSH keys")
    .option('--jupyter', 'inject a generated JUPYTER_PASSWORD')
    .action(async (o: CreateFlags) => {
      const body: Record<string, unknown> = o.body ? readJsonObject(o.body, '--body') : {}
      const set = (k: string, v: unknown) => v !== undefined && (body[k] = v)
      set('name', o.name)
      set('type', o.type)
      if (o.gpu || o.gpusPerPod || o.pods) {
        const compute = (body.compute ?? {}) as Record<string, unknown>
        body.compute = {
          ...compute,
          ...(o.gpu ? { gpuTypeId: o.gpu } : {}),
          gpuCountPerPod: o.gpusPerPod ?? compute.gpuCountPerPod ?? 1,
          ...(o.pods ? { podCount: o.pods } : {}),
        }
      }
      set('image', o.image)
      set('args', o.args)
      set('env', o.env)
      set('ports', o.port)
      set('disk', o.disk)
      set('dataCenterIds', o.dataCenter)
      if (o.ssh) body.startSsh = true
      if (o.jupyter) body.startJupyter = true
      print(o, await clientFor(o).createCluster(body as CreateCluster))
    })
  clientCommand(group, 'rename <id> <name>', 'rename a cluster').action(
    async (id: string, name: string, opts: ClientOptions) => {
      print(opts, await clientFor(opts).updateCluster(id, { name }))
    },
  )
  clientCommand(group, 'delete <id>', 'delete a cluster, terminating every member').action(
    async (id: string, opts: ClientOptions) => {
      await clientFor(opts).deleteCluster(id)
      print(opts, { deleted: id }, () => `deleted ${id}`)
    },
  )
}
