import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import { messageOf } from './engineErrors.js'
import { engineClient } from './engineClient.js'
import type { EngineConfig } from './EngineConfig.js'
import { engineKind } from './engineKind.js'
import { ensureSampleImage } from './sampleImages.js'

/** One step of an engine check: what was tried, how it went, and what to do when it failed. */
export interface CheckStep {
  step: 'engine' | 'image' | 'container' | 'reach'
  ok: boolean
  detail: string
  fix?: string
}

const DOCS = 'docs/containers.md'

/**
 * Probes an engine the way workers use it: it answers; the sample image is there (built if not); a container
 * with the configured network, cgroup parent and init starts; and that container reaches `url`, the address
 * workers are told to call. Nothing listens there (Hangar not running)? For a local address the check
 * listens there itself for the time of the probe. Stops at the first failed step.
 */
export async function checkEngine(engine: EngineConfig, url: string): Promise<CheckStep[]> {
  const steps: CheckStep[] = []
  const docker = engineClient(engine)
  try {
    await docker.ping()
    const k = await engineKind(docker)
    steps.push({
      step: 'engine',
      ok: true,
      detail: `${engine.address} answers: ${k.kind === 'podman' ? 'Podman' : 'Docker'} ${k.version} (API ${k.apiVersion})`,
    })
  } catch (err) {
    steps.push({
      step: 'engine',
      ok: false,
      detail: `${engine.address} does not answer: ${messageOf(err)}`,
      fix: unreachableFix(engine, err),
    })
    return steps
  }
  let image: string
  try {
    const t0 = Date.now()
    let built = false
    image = await ensureSampleImage(docker, 'echo', () => (built = true))
    steps.push({
      step: 'image',
      ok: true,
      detail: built ? `built ${image} in ${((Date.now() - t0) / 1000).toFixed(1)} s` : `${image} is there`,
    })
  } catch (err) {
    steps.push({
      step: 'image',
      ok: false,
      detail: (err as Error).message,
      fix: `the engine must be able to build images from a local context (POST /build); ${createFix((err as Error).message) ?? "see the engine's own log"}`,
    })
    return steps
  }
  const token = randomBytes(8).toString('hex')
  const listener = await listenIfFree(url, token)
  const probe = `fetch(process.env.PROBE_URL, { signal: AbortSignal.timeout(5000) }).then(async (r) => console.log('HTTP ' + r.status + ' ' + (await r.text()).slice(0, 200)), (e) => console.log('FAILED ' + (e.cause?.code ?? e.cause?.message ?? e.message)))`
  const container = await docker
    .createContainer({
      name: `hangar-engine-check-${token}`,
      Image: image,
      Cmd: ['node', '-e', probe],
      Env: [`PROBE_URL=${url}`],
      Labels: { 'io.hangar.check': 'true' },
      HostConfig: {
        Init: true,
        NetworkMode: engine.network === 'host' ? 'host' : undefined,
        CgroupParent: engine.cgroupParent,
      },
    })
    .catch((err: unknown) => err as Error)
  try {
    if (container instanceof Error) {
      steps.push({
        step: 'container',
        ok: false,
        detail: `cannot create a container: ${messageOf(container)}`,
        fix: createFix(messageOf(container)) ?? `see the engine's log (${DOCS})`,
      })
      return steps
    }
    try {
      await container.start()
    } catch (err) {
      steps.push({
        step: 'container',
        ok: false,
        detail: `cannot start a container: ${messageOf(err)}`,
        fix: createFix(messageOf(err)) ?? `see the engine's log (${DOCS})`,
      })
      return steps
    }
    const exit = (await container.wait()) as { StatusCode: number }
    const out = demux(await container.logs({ stdout: true, stderr: true })).trim()
    if (exit.StatusCode !== 0 || !/^(HTTP|FAILED) /m.test(out)) {
      steps.push({
        step: 'container',
        ok: false,
        detail: `a container of ${image} ran but its program failed (exit ${exit.StatusCode}): ${out.split('\n').slice(-3).join(' | ')}`,
        fix: createFix(out) ?? `see the engine's log (${DOCS})`,
      })
      return steps
    }
    steps.push({
      step: 'container',
      ok: true,
      detail: `a container on network ${engine.network}${engine.cgroupParent ? ` under cgroup ${engine.cgroupParent}` : ''} started and exited cleanly`,
    })
    const line = /^(HTTP|FAILED) .*$/m.exec(out)![0]
    if (line.startsWith('HTTP ')) {
      const ours = line.includes(token)
      steps.push({
        step: 'reach',
        ok: true,
        detail: `a container reaches ${url} (${ours ? 'this check listened there, as Hangar is not running' : line.slice(0, 60)})`,
      })
    } else {
      steps.push({
        step: 'reach',
        ok: false,
        detail: `a container cannot reach ${url}, the URL workers are told to call: ${line.slice(7)}`,
        fix: reachFix(engine, url),
      })
    }
    return steps
  } finally {
    // Best effort: a remove that fails (the engine went away meanwhile) leaves one stopped container labelled
    // io.hangar.check; what the check reports are its steps above.
    if (!(container instanceof Error)) await container.remove({ force: true }).catch(() => undefined)
    await new Promise((resolve) => (listener ? listener.close(resolve) : resolve(undefined)))
  }
}

/** Listens on `url`'s address for the check when nothing does (a local address Hangar would use); null otherwise. */
async function listenIfFree(url: string, token: string): Promise<Server | null> {
  const u = new URL(url)
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80))
  const server = createServer((_req, res) => res.end(`hangar engine check ${token}`))
  return new Promise((resolve) => {
    server.once('error', () => resolve(null))
    server.listen(port, u.hostname.replace(/^\[|\]$/g, ''), () => resolve(server))
  })
}

/** Engine stdout/stderr as the API sends it without a TTY: 8-byte frame headers, then the bytes. */
function demux(buf: Buffer): string {
  let out = ''
  let i = 0
  while (i + 8 <= buf.length && buf[i] <= 2 && buf[i + 1] === 0) {
    const len = buf.readUInt32BE(i + 4)
    out += buf.subarray(i + 8, i + 8 + len).toString()
    i += 8 + len
  }
  return i === 0 ? buf.toString() : out
}

function unreachableFix(engine: EngineConfig, err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code
  const socket = engine.address.startsWith('unix://') ? new URL(engine.address).pathname : null
  if (socket && code === 'ENOENT')
    return `no socket at ${socket}: start the engine's API there, e.g. \`podman system service --time=0 unix://${socket} &\` (its folder must exist: \`mkdir -p ${socket.replace(/\/[^/]+$/, '')}\`; ${DOCS})`
  if (socket && code === 'EACCES')
    return `no permission on ${socket}: run Hangar as a user that may use it (root for rootful Podman, the docker group for Docker)`
  if (code === 'ECONNREFUSED')
    return `nothing accepts connections at ${engine.address}: the engine's API service is not running (${DOCS})`
  return `check the address (engine.address / HANGAR_ENGINE) and that the engine runs (${DOCS})`
}

/** What to change when the engine cannot create or start a container, from its message. */
export function createFix(message: string): string | null {
  const m = message.toLowerCase()
  if (/rlimit|setrlimit|ulimit/.test(m))
    return 'the engine cannot apply its default ulimits (root lacks CAP_SYS_RESOURCE): set `default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]` under [containers] in a containers.conf and start the engine with CONTAINERS_CONF pointing at it'
  if (/hybrid mode|crun/.test(m))
    return 'crun does not run on this cgroup v1 ("hybrid") machine: set `runtime = "runc"` under [engine] in containers.conf (install runc) and restart the engine'
  if (/systemd|dbus|cgroup manager/.test(m))
    return 'set `cgroup_manager = "cgroupfs"` under [engine] in containers.conf and restart the engine'
  if (/catatonit|init binary|docker-init/.test(m))
    return 'containers run with an init process: install catatonit (Podman) or docker-init (Docker)'
  if (/cgroup/.test(m)) return 'the cgroup parent is not usable: change or drop `cgroupParent` in the engine settings'
  if (/network|netns|cni|slirp/.test(m))
    return 'the engine cannot set up this network: use `"network": "host"` in the engine settings (and `netns = "host"` in containers.conf)'
  return null
}

function reachFix(engine: EngineConfig, url: string): string {
  const host = new URL(url).hostname
  const loopback = /^(127\.|localhost$|\[?::1\]?$)/.test(host)
  if (engine.network === 'bridge' && loopback) {
    return `on the bridge network a container's ${host} is itself: set "network": "host" in the engine (one machine), or set workerUrl (HANGAR_WORKER_URL) or the engine's controlPlaneUrl to an address containers reach, such as the bridge gateway (http://172.17.0.1:PORT for Docker), and listen there (--host 0.0.0.0)`
  }
  if (engine.network === 'bridge')
    return `set workerUrl (HANGAR_WORKER_URL) or the engine's controlPlaneUrl to an address of this machine that containers on the bridge reach, and make Hangar listen there (--host); or use "network": "host" on a single machine`
  return `containers share this host's network, so ${url} must answer from this host: set workerUrl (HANGAR_WORKER_URL) or the engine's controlPlaneUrl to the address Hangar listens on (http://127.0.0.1:PORT by default), or leave it unset`
}
