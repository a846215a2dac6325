/**
 * Sample pod program `hangar/pod:latest`: answers HTTP on every port Hangar mapped for it
 * (`HANGAR_PORT_<port>`), keeps files in its persistent mount, and prints what it does.
 *
 * - `GET /` -> `{podId, port, boots, ssh, jupyter, scratch}`: `boots` counts starts recorded on the
 *   persistent mount, `ssh`/`jupyter` whether PUBLIC_KEY / JUPYTER_PASSWORD were set, `scratch` whether the
 *   container disk still held the file of an earlier start (it must not).
 * - `PUT /files/<name>` stores the body in the persistent mount (else the container disk); `GET /files/<name>` reads it.
 * - `POST /exit?code=N` ends the program with that code (to see EXITED and ERROR).
 * - `GET /env/<NAME>` -> the value of an environment variable (tests of what the pod was given).
 * - `GET /headers` -> the request headers it received; the answer carries hop-by-hop headers of its own
 *   (`Proxy-Authenticate`, `Keep-Alive`, `X-Hop` named in `Connection`) besides `X-Kept` (proxy tests).
 * - `CLOSED_PORTS` env (comma-separated private ports): ports it does not listen on (a refused connection).
 * - `EXIT_AFTER_MS` / `EXIT_CODE` env: end by itself after a while.
 */
import { createServer } from 'node:http'
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const podId = process.env.RUNPOD_POD_ID ?? 'unknown'
const persistent =
  process.env.HANGAR_PERSISTENT_PATH ?? process.env.HANGAR_VOLUME_PATH ?? process.env.HANGAR_DISK_PATH ?? process.cwd()
const disk = process.env.HANGAR_DISK_PATH ?? process.cwd()
mkdirSync(persistent, { recursive: true })
appendFileSync(join(persistent, 'boots.log'), `${new Date().toISOString()}\n`)
const boots = readFileSync(join(persistent, 'boots.log'), 'utf8').trim().split('\n').length
const scratch = existsSync(join(disk, 'scratch.txt'))
writeFileSync(join(disk, 'scratch.txt'), 'written at start')
console.log(`pod ${podId}: start #${boots}; persistent files in ${persistent}`)

const ports = Object.entries(process.env)
  .filter(([k]) => /^HANGAR_PORT_\d+$/.test(k))
  .map(([k, v]) => ({ port: Number(k.slice('HANGAR_PORT_'.length)), listen: Number(v) }))

const closed = new Set((process.env.CLOSED_PORTS ?? '').split(',').filter(Boolean).map(Number))
for (const { port, listen } of ports.filter((p) => !closed.has(p.port))) {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://pod')
    console.log(`${req.method} ${url.pathname} on port ${port}`)
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(body))
    }
    const file = /^\/files\/([\w.-]+)$/.exec(url.pathname)?.[1]
    if (req.method === 'GET' && url.pathname === '/')
      return json(200, {
        podId,
        port,
        boots,
        ssh: !!process.env.PUBLIC_KEY,
        jupyter: !!process.env.JUPYTER_PASSWORD,
        scratch,
      })
    if (req.method === 'GET' && url.pathname === '/headers') {
      res.writeHead(200, {
        'content-type': 'application/json',
        'proxy-authenticate': 'Basic realm="pod"',
        'keep-alive': 'timeout=5',
        connection: 'keep-alive, x-hop',
        'x-hop': 'secret',
        'x-kept': 'yes',
      })
      return res.end(JSON.stringify(req.headers))
    }
    if (req.method === 'GET' && url.pathname.startsWith('/env/'))
      return json(200, { value: process.env[url.pathname.slice(5)] ?? null })
    if (file && req.method === 'PUT') {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        writeFileSync(join(persistent, file), Buffer.concat(chunks))
        console.log(`wrote ${file}`)
        json(201, { stored: file })
      })
      return
    }
    if (file && req.method === 'GET') {
      if (!existsSync(join(persistent, file))) return json(404, { error: `no file ${file}` })
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      return res.end(readFileSync(join(persistent, file)))
    }
    if (req.method === 'POST' && url.pathname === '/exit') {
      const code = Number(url.searchParams.get('code') ?? 0)
      json(200, { exiting: code })
      console.log(`exiting with code ${code}`)
      setTimeout(() => process.exit(code), 20)
      return
    }
    json(404, { error: `no route ${req.method} ${url.pathname}` })
  })
  server.listen(listen, '127.0.0.1', () => console.log(`listening for port ${port} on ${listen}`))
}

if (process.env.EXIT_AFTER_MS) {
  setTimeout(() => {
    console.log(`done after ${process.env.EXIT_AFTER_MS} ms`)
    process.exit(Number(process.env.EXIT_CODE ?? 0))
  }, Number(process.env.EXIT_AFTER_MS))
}
process.on('SIGTERM', () => {
  console.log('SIGTERM: stopping')
  process.exit(0)
})
