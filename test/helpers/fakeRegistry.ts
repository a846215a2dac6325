import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, symlinkSync, mkdirSync, copyFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'

/** A private registry serving one image (busybox, running `cmd`) to clients with the right Basic credentials. */
export interface FakeRegistry {
  /** `127.0.0.1:<port>` */
  host: string
  /** `<host>/acme/private:1` */
  image: string
  /** Authorization headers received, in order (`-` when none). */
  seen: string[]
  close(): Promise<void>
}

const sha = (b: Buffer | string) => `sha256:${createHash('sha256').update(b).digest('hex')}`

export async function startFakeRegistry(username: string, password: string, cmd: string[]): Promise<FakeRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'hangar-registry-'))
  mkdirSync(join(dir, 'root', 'bin'), { recursive: true })
  copyFileSync('/bin/busybox', join(dir, 'root', 'bin', 'busybox'))
  for (const applet of ['sh', 'sleep', 'echo']) symlinkSync('busybox', join(dir, 'root', 'bin', applet))
  execFileSync('tar', ['-C', join(dir, 'root'), '-czf', join(dir, 'layer.tar.gz'), '.'])
  const layer = readFileSync(join(dir, 'layer.tar.gz'))
  rmSync(dir, { recursive: true, force: true })
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      rootfs: { type: 'layers', diff_ids: [sha(gunzipSync(layer))] },
      config: { Cmd: cmd },
    }),
  )
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
      config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha(config) },
      layers: [
        { mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: layer.length, digest: sha(layer) },
      ],
    }),
  )
  const blobs = new Map([
    [sha(config), config],
    [sha(layer), layer],
  ])
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`
  const seen: string[] = []
  const server: Server = createServer((req, res) => {
    seen.push(req.headers.authorization ?? '-')
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="fake"', 'content-type': 'application/json' })
      return res.end(JSON.stringify({ errors: [{ code: 'UNAUTHORIZED', message: 'authentication required' }] }))
    }
    const url = req.url ?? ''
    if (url === '/v2/') return res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    if (url === '/v2/acme/private/manifests/1') {
      res.writeHead(200, {
        'content-type': 'application/vnd.docker.distribution.manifest.v2+json',
        'docker-content-digest': sha(manifest),
        'content-length': manifest.length,
      })
      return res.end(req.method === 'HEAD' ? undefined : manifest)
    }
    const blob = blobs.get(url.replace('/v2/acme/private/blobs/', ''))
    if (blob) {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': blob.length,
        'docker-content-digest': sha(blob),
      })
      return res.end(req.method === 'HEAD' ? undefined : blob)
    }
    res
      .writeHead(404, { 'content-type': 'application/json' })
      .end(JSON.stringify({ errors: [{ code: 'NOT_FOUND', message: 'unknown' }] }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const host = `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  return {
    host,
    image: `${host}/acme/private:1`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}
