import { Option, type Command } from 'commander'
import type { NetworkVolume } from '../../contract/networkVolume.js'
import { clientCommand, clientFor, intOption, type ClientOptions } from '../clientCommand.js'
import { CliError, ExitCode } from '../exitCodes.js'
import { print, type Column } from '../output.js'

const columns: Column<NetworkVolume>[] = [
  { header: 'id', value: (v) => v.id },
  { header: 'name', value: (v) => v.name },
  { header: 'size gb', value: (v) => v.size },
  { header: 'data center', value: (v) => v.dataCenter },
  { header: 'type', value: (v) => v.type },
]

/** `hangar volumes`: network volumes. */
export function registerVolumes(program: Command): void {
  const group = program.command('volumes').description('network volumes')
  clientCommand(group, 'list', 'list your network volumes').action(async (opts: ClientOptions) => {
    const list = await clientFor(opts).listVolumes()
    print(opts, list, { rows: list, columns })
  })
  clientCommand(group, 'get <id>', 'show a network volume').action(async (id: string, opts: ClientOptions) => {
    print(opts, await clientFor(opts).getVolume(id))
  })
  clientCommand(group, 'create', 'create a network volume')
    .requiredOption('--name <name>', 'volume name')
    .requiredOption('--size <gb>', 'size, GB (10-4096)', intOption)
    .option(
      '--data-center <id>',
      'data center (see hangar catalog datacenters); may be left out when there is only one',
    )
    .addOption(
      new Option('--type <type>', "storage type; default: the data center's first").choices([
        'STANDARD',
        'HIGH_PERFORMANCE',
      ]),
    )
    .action(
      async (
        opts: ClientOptions & {
          name: string
          size: number
          dataCenter?: string
          type?: 'STANDARD' | 'HIGH_PERFORMANCE'
        },
      ) => {
        const client = clientFor(opts)
        let dataCenter = opts.dataCenter
        if (!dataCenter) {
          const all = await client.catalogDataCenters()
          if (all.length !== 1)
            throw new CliError(
              `--data-center is required: there are ${all.length} data centers (${all.map((d) => d.id).join(', ')})`,
              ExitCode.USAGE,
            )
          dataCenter = all[0].id
        }
        print(
          opts,
          await client.createVolume({
            name: opts.name,
            size: opts.size,
            dataCenter,
            ...(opts.type ? { type: opts.type } : {}),
          }),
        )
      },
    )
  clientCommand(group, 'update <id>', 'rename or grow a network volume')
    .option('--name <name>', 'new name')
    .option('--size <gb>', 'new size, GB (may only grow)', intOption)
    .action(async (id: string, opts: ClientOptions & { name?: string; size?: number }) => {
      print(
        opts,
        await clientFor(opts).updateVolume(id, {
          ...(opts.name !== undefined ? { name: opts.name } : {}),
          ...(opts.size !== undefined ? { size: opts.size } : {}),
        }),
      )
    })
  clientCommand(group, 'delete <id>', 'delete a network volume and its files').action(
    async (id: string, opts: ClientOptions) => {
      await clientFor(opts).deleteVolume(id)
      print(opts, { deleted: id }, () => `deleted ${id}`)
    },
  )
}
