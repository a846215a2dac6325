import type { Command } from 'commander'
import type { CpuFlavor, DataCenter, GpuType } from '../../contract/catalog.js'
import { clientCommand, clientFor, type ClientOptions } from '../clientCommand.js'
import { print, type Column } from '../output.js'

const gpuColumns: Column<GpuType>[] = [
  { header: 'id', value: (g) => g.id },
  { header: 'pool', value: (g) => g.pool },
  { header: 'memory gb', value: (g) => g.memory },
  { header: '$/h', value: (g) => g.price.secure },
  { header: 'free', value: (g) => (g.stock ? `${g.stock.free}/${g.stock.total}` : null) },
  { header: 'virtual', value: (g) => (g.virtual ? 'yes' : null) },
]
const cpuColumns: Column<CpuFlavor>[] = [
  { header: 'id', value: (c) => c.id },
  { header: 'name', value: (c) => c.name },
  { header: 'vcpus', value: (c) => `${c.vcpu.min}-${c.vcpu.max}` },
  { header: 'gb/vcpu', value: (c) => c.ramGbPerVcpu },
  { header: 'free vcpus', value: (c) => (c.stock ? `${c.stock.freeVcpu}/${c.stock.totalVcpu}` : null) },
]
const dcColumns: Column<DataCenter>[] = [
  { header: 'id', value: (d) => d.id },
  { header: 'name', value: (d) => d.name },
  { header: 'region', value: (d) => d.region },
  { header: 'volume types', value: (d) => d.networkVolumeTypes.join(',') },
]

/** `hangar catalog`: what `--gpu`, `--cpu` and `--data-center` accept. */
export function registerCatalog(program: Command): void {
  const group = program
    .command('catalog')
    .description('what can be asked for: GPU types (--gpu), CPU flavors (--cpu) and data centers (--data-center)')
  clientCommand(group, 'gpus', 'GPU types, their serverless pool and what the fleet has free').action(
    async (opts: ClientOptions) => {
      const gpus = await clientFor(opts).catalogGpus()
      print(opts, { gpus }, { rows: gpus, columns: gpuColumns, empty: 'no GPU types' })
    },
  )
  clientCommand(group, 'cpus', 'CPU flavors (use as FLAVOR:VCPUS, e.g. cpu3c:2)').action(
    async (opts: ClientOptions) => {
      const cpus = await clientFor(opts).catalogCpus()
      print(opts, { cpus }, { rows: cpus, columns: cpuColumns, empty: 'no CPU flavors' })
    },
  )
  clientCommand(group, 'datacenters', 'data centers').action(async (opts: ClientOptions) => {
    const dataCenters = await clientFor(opts).catalogDataCenters()
    print(opts, { dataCenters }, { rows: dataCenters, columns: dcColumns, empty: 'no data centers' })
  })
}
