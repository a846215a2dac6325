import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { loadClientConfig, loadConfig } from '../config.js'
import { startHangar } from '../main.js'
import { HangarClient } from './HangarClient.js'

const USAGE = `Usage:
  hangar serve [--host 127.0.0.1] [--port 8080] [--data-dir ./.hangar] [--config FILE]
  hangar accounts create NAME [--rate-limit-exempt]
  hangar accounts list
  hangar keys create --account NAME --permission ALL|READ_ONLY|RESTRICTED [--endpoint ID ...] [--expires DATE] [--name NAME]
  hangar keys list [--account NAME]
  hangar keys revoke ID

Client commands talk to a running server: --url (or HANGAR_URL, default http://127.0.0.1:8080) with
--api-key (or HANGAR_API_KEY; default: the admin key in <data-dir>/admin-key).`

/** Entry point of the `hangar` command; returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, sub, ...rest] = argv
  switch (command) {
    case 'serve':
      return serve(argv.slice(1))
    case 'accounts':
    case 'keys':
      return client(command, sub, rest)
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE)
      return 0
    default:
      console.error(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`)
      return 2
  }
}

async function serve(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { host: { type: 'string' }, port: { type: 'string' }, 'data-dir': { type: 'string' }, config: { type: 'string' } },
    strict: true,
  })
  const port = values.port === undefined ? undefined : Number(values.port)
  if (port !== undefined && !Number.isInteger(port)) throw new Error(`--port: expected an integer, got ${JSON.stringify(values.port)}`)
  const config = loadConfig({ host: values.host, port, dataDir: values['data-dir'], configFile: values.config })
  const hangar = await startHangar(config)
  const lines = [`Hangar is listening on ${hangar.url}`, `  API docs:    ${hangar.url}/docs  (schema: ${hangar.url}/v2/openapi.json)`, `  data dir:    ${config.dataDir}`]
  if (hangar.adminKey && hangar.adminKeyFile) lines.push(`  admin key:   ${hangar.adminKey}  (shown once; saved to ${hangar.adminKeyFile}, mode 0600)`)
  else if (hangar.adminKeyFile) lines.push(`  admin key:   in ${hangar.adminKeyFile}`)
  else lines.push('  admin key:   the one set with HANGAR_ADMIN_API_KEY')
  console.log(lines.join('\n'))

  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      console.log(`${signal}: stopping (finishing requests in flight)`)
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      resolve()
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
  })
  await hangar.stop()
  console.log('stopped')
  return 0
}

async function client(command: string, sub: string | undefined, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      url: { type: 'string' },
      'api-key': { type: 'string' },
      'data-dir': { type: 'string' },
      account: { type: 'string' },
      permission: { type: 'string' },
      endpoint: { type: 'string', multiple: true },
      expires: { type: 'string' },
      name: { type: 'string' },
      'rate-limit-exempt': { type: 'boolean' },
      json: { type: 'boolean' },
    },
  })
  const cc = loadClientConfig({ url: values.url, apiKey: values['api-key'], dataDir: values['data-dir'] })
  let apiKey = cc.apiKey
  if (!apiKey) {
    try {
      apiKey = readFileSync(join(cc.dataDir, 'admin-key'), 'utf8').trim()
    } catch {
      throw new Error(`no API key: pass --api-key, set HANGAR_API_KEY, or run next to the data dir holding admin-key (${cc.dataDir})`)
    }
  }
  const api = new HangarClient(cc.url, apiKey)
  const out = (v: unknown) => console.log(JSON.stringify(v, null, 2))

  if (command === 'accounts' && sub === 'create') {
    if (positionals.length !== 1) throw new Error('usage: hangar accounts create NAME')
    out(await api.createAccount({ name: positionals[0], rateLimitExempt: values['rate-limit-exempt'] ?? false }))
  } else if (command === 'accounts' && sub === 'list') {
    out(await api.listAccounts())
  } else if (command === 'keys' && sub === 'create') {
    if (!values.account || !values.permission) throw new Error('usage: hangar keys create --account NAME --permission ALL|READ_ONLY|RESTRICTED')
    let expiresAt: string | undefined
    if (values.expires) {
      const t = Date.parse(values.expires)
      if (Number.isNaN(t)) throw new Error(`--expires: not a date: ${JSON.stringify(values.expires)}`)
      expiresAt = new Date(t).toISOString()
    }
    const key = await api.createKey({
      account: values.account,
      permission: values.permission as 'ALL',
      endpointIds: values.endpoint,
      expiresAt,
      name: values.name,
    })
    out(key)
    console.error('The key above is shown only now; store it safely.')
  } else if (command === 'keys' && sub === 'list') {
    out(await api.listKeys(values.account))
  } else if (command === 'keys' && sub === 'revoke') {
    if (positionals.length !== 1) throw new Error('usage: hangar keys revoke ID')
    out(await api.revokeKey(positionals[0]))
  } else {
    console.error(USAGE)
    return 2
  }
  return 0
}
