import { execFile } from 'node:child_process'
import { readFileSync, rmSync } from 'node:fs'
import { networkInterfaces } from 'node:os'
import { dirname, join } from 'node:path'
import type { Readable } from 'node:stream'
import { promisify } from 'node:util'
import type { PublishedPort } from '../RuntimeDriver.js'
import { forwardPorts, publishPorts, stopForwarder } from './forwarder.js'
import { LAUNCH_ENV, type SandboxNetwork } from './sandbox.js'

const run = promisify(execFile)

/** What a sandbox's network namespace is connected to. */
export interface SandboxLinks {
  /** Ports of the host's loopback the program reaches at the same port of its own (the control plane's). */
  hostPorts: number[]
  /** The loopback address the control plane's URL names (`127.0.0.1`, `::1`, `localhost`); 127.0.0.1 if not given. */
  hostAddress?: string
  /** The program's declared ports, published on the host's loopback (publicPort -> privatePort). */
  published: PublishedPort[]
}

/**
 * The pid of the sandbox's init, from bwrap's `--info-fd` JSON (`{"child-pid": N, ...}`, read whole: bwrap is
 * killed by SIGPIPE if the reader goes before it has written everything); rejects when the sandbox ends or says
 * nothing within `timeoutMs`. The stream is left open and read to its end, closed with the workload.
 */
export function readSandboxPid(info: Readable, timeoutMs = 10_000): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = ''
    let settled = false
    const done = (err: Error | null, pid?: number) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      if (err) reject(err)
      else resolve(pid!)
    }
    const timer = setTimeout(
      () => done(new Error(`the sandbox did not report its process within ${timeoutMs} ms`)),
      timeoutMs,
    )
    info.on('data', (chunk: Buffer) => {
      if (settled) return
      text += chunk.toString('utf8')
      let parsed: { 'child-pid'?: unknown }
      try {
        parsed = JSON.parse(text)
      } catch {
        // Not all of it yet: the next chunk completes it (the timer above ends a wait that lasts).
        return
      }
      if (typeof parsed['child-pid'] === 'number') done(null, parsed['child-pid'])
      else done(new Error(`the sandbox reported no process: ${text.slice(0, 200)}`))
    })
    info.once('error', (err) => done(err))
    info.once('end', () =>
      done(new Error(`the sandbox ended before it reported its process${text ? `: ${text.slice(0, 200)}` : ''}`)),
    )
  })
}

/**
 * pasta's options for a sandbox's links (its default for each forwarding option is `auto`: none unless named).
 * `splice`: whether pasta forwards the control plane's port (`-T`) and the published ports (`-t`); as root
 * Hangar's relays do instead (forwarder.ts).
 */
function pastaOptions(
  network: Extract<SandboxNetwork, { pasta: string }>,
  links: SandboxLinks,
  splice: boolean,
): string[] {
  const forwards = (flag: string, specs: string[]) =>
    specs.length > 0 ? specs.flatMap((s) => [flag, s]) : [flag, 'none']
  const args = ['--quiet', '--no-map-gw', '--no-dhcp', '--no-dhcpv6', '-u', 'none', '-U', 'none']
  if (network.mode === 'internet') args.push('--config-net')
  args.push(...forwards('-T', splice ? links.hostPorts.map(String) : []))
  args.push(...forwards('-t', splice ? links.published.map((p) => `${p.ip}/${p.publicPort}:${p.privatePort}`) : []))
  return args
}

/** Set in the namespace before anything of the tenant runs: ports below 1024 allowed, the host's addresses blackholed. */
const NET_SETUP =
  'echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start || exit 1; for a in $1; do case $a in *:*) ip -6 route add blackhole "$a" ;; *) ip route add blackhole "$a" ;; esac || exit 1; done'

/**
 * As an ordinary user, pasta makes the namespaces and runs the sandbox inside them (`pasta ... -- sh -c
 * NET_SETUP -- bwrap ...`): the prefix of the sandbox's argv. The set-up runs as the namespace's owner before
 * bwrap, whose own user namespace keeps the program from changing the routes. pasta ends with the sandbox and
 * exits with its status. Here pasta still forwards the control plane's port (`-T`) and the published ports
 * (`-t`), whose stalls on big bodies (passt bug 74) the as-root path avoids with its relays: entering pasta's
 * user namespace to place them is not done yet.
 */
export function wrappedNetwork(network: Extract<SandboxNetwork, { pasta: string }>, links: SandboxLinks): string[] {
  const blackholes = network.mode === 'internet' ? hostAddresses() : []
  return [
    network.pasta,
    ...pastaOptions(network, links, true),
    '--',
    '/bin/sh',
    '-c',
    `${NET_SETUP}; shift; exec "$@"`,
    'hangar-net',
    blackholes.join(' '),
  ]
}

/**
 * As root: connects the network namespace of sandbox process `init` with pasta (Debian's passt), started by its
 * absolute path with LAUNCH_ENV and arguments of Hangar's alone (numbers and fixed flags): in `internet` mode the
 * namespace gets an
 * address and outbound connections, but the gateway is not mapped to the host (`--no-map-gw`) and every address
 * of the host is a blackhole route inside (nsenter), so the host's loopback and other addresses stay out of
 * reach. pasta does not notice the namespace going: it writes its pid to `pidFile` and is ended with the
 * workload (stopNetwork, and the supervisor). Programs may then listen on ports below 1024 inside. The control
 * plane's port and the published ports are carried by Hangar's relays (forwarder.ts), not pasta's `-T` and
 * `-t`: Debian's pasta of 2023-03 stalls for good on big bodies through either (bench/RESULTS.md); their pids
 * go next to pasta's, and stopNetwork ends them too.
 */
export async function connectSandbox(
  network: Extract<SandboxNetwork, { pasta: string }>,
  init: number,
  links: SandboxLinks,
  pidFile: string,
  setpriv: string,
): Promise<void> {
  // The relays' node processes start alongside pasta (their start-up is most of their cost); they take their
  // sockets after the set-up, where a control plane on a port below 1024 is one the listener (not root) may take.
  const relays = [
    forwardPorts({
      init,
      address: links.hostAddress ?? '127.0.0.1',
      ports: links.hostPorts,
      setpriv,
      pidFile: relayPidFile(pidFile, 'forward'),
    }),
    publishPorts({ init, published: links.published, setpriv, pidFile: relayPidFile(pidFile, 'publish') }),
  ]
  try {
    await connectWithPasta(network, init, links, pidFile)
  } catch (err) {
    for (const r of relays) r.kill()
    throw err
  }
  const started = await Promise.allSettled(relays.map((r) => r.start()))
  const failed = started.find((r) => r.status === 'rejected')
  if (failed) {
    // One of them may be running: ended with the workload's network (stopNetwork, by the caller).
    throw new Error(`cannot connect the sandbox's network: ${(failed.reason as Error).message}`)
  }
}

/** pasta and the namespace's set-up (routes, low ports), as connectSandbox says. */
async function connectWithPasta(
  network: Extract<SandboxNetwork, { pasta: string }>,
  init: number,
  links: SandboxLinks,
  pidFile: string,
): Promise<void> {
  const ns = `/proc/${init}/ns`
  // pasta must stay uid 0 to enter a namespace of the initial user namespace (it keeps CAP_SYS_ADMIN and
  // CAP_NET_BIND_SERVICE only, under seccomp, with no_new_privs and an empty filesystem).
  const args = [...pastaOptions(network, links, false), '--pid', pidFile, '--runas', '0', '--netns', `${ns}/net`]
  // bwrap reports its init before it has dropped its privileges (and is dumpable again): until then pasta, which
  // keeps no CAP_SYS_PTRACE, cannot open its namespaces. Tried again for a moment.
  await attempt(async () => {
    for (let tries = 1; ; tries++) {
      try {
        return await run(network.pasta, args, { env: { ...LAUNCH_ENV }, timeout: 10_000 })
      } catch (err) {
        if (tries >= 400 || !/Couldn't open (network|user) namespace/.test(String((err as { stderr?: string }).stderr)))
          throw err
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    }
  }, `pasta (${network.pasta})`)
  const blackholes = network.mode === 'internet' ? hostAddresses() : []
  await attempt(
    () =>
      run(
        '/usr/bin/nsenter',
        [`--net=${ns}/net`, '--', '/bin/sh', '-c', NET_SETUP, 'hangar-net', blackholes.join(' ')],
        { env: { ...LAUNCH_ENV }, timeout: 10_000 },
      ),
    'the namespace set-up (nsenter)',
  )
}

/** The pid file of a relay (`forward`: the control plane's port; `publish`: the published ports), next to pasta's. */
function relayPidFile(pidFile: string, which: 'forward' | 'publish'): string {
  return join(dirname(pidFile), `${which}.pid`)
}

/**
 * What a sandbox must not reach through pasta: every local address of the host other than loopback, as host
 * routes (`/32`, `/128`), and IPv4 link-local (cloud metadata services). Read from the kernel's local routes and
 * IPv6 address list, which include interfaces without carrier (an idle bridge still answers on its address),
 * together with what Node lists.
 */
export function hostAddresses(): string[] {
  const found = new Set<string>(['169.254.0.0/16'])
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal) continue
      found.add(a.family === 'IPv6' ? `${a.address.replace(/%.*$/, '')}/128` : `${a.address}/32`)
    }
  }
  try {
    // `|-- <address>` followed by `/32 host LOCAL`: an address of this host.
    const lines = readFileSync('/proc/net/fib_trie', 'utf8').split('\n')
    for (let k = 1; k < lines.length; k++) {
      const m = /\|-- (\d+\.\d+\.\d+\.\d+)$/.exec(lines[k - 1].trim())
      if (m && /\/32 host LOCAL/.test(lines[k]) && !m[1].startsWith('127.')) found.add(`${m[1]}/32`)
    }
  } catch {
    // no procfs route view: Node's list stands
  }
  try {
    for (const line of readFileSync('/proc/net/if_inet6', 'utf8').split('\n')) {
      const [hex, , , , , name] = line.trim().split(/\s+/)
      if (!hex || hex.length !== 32 || name === 'lo') continue
      // Written as Node writes it (compressed), so that no address is routed twice.
      const full = hex.match(/.{4}/g)!.join(':')
      found.add(`${new URL(`http://[${full}]`).hostname.slice(1, -1)}/128`)
    }
  } catch {
    // no IPv6
  }
  return [...found]
}

async function attempt(f: () => Promise<unknown>, what: string): Promise<void> {
  try {
    await f()
  } catch (err) {
    const e = err as { stderr?: string; message: string }
    const said = (e.stderr ?? '')
      .split('\n')
      .filter((l) => l && !/syslog|Changing to nobody/.test(l))
      .join('; ')
    throw new Error(`cannot connect the sandbox's network: ${what} failed: ${said || e.message}`)
  }
}

/**
 * Ends the pasta of a workload (by its pid file, if that pid is still a pasta) and its relays, and removes
 * their files.
 */
export function stopNetwork(pidFile: string): void {
  stopForwarder(relayPidFile(pidFile, 'forward'))
  stopForwarder(relayPidFile(pidFile, 'publish'))
  let pid = 0
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim())
  } catch {
    // No pid file: this workload had no network of its own, or it was ended already.
    return
  }
  try {
    if (pid > 0 && /^pas/.test(readFileSync(`/proc/${pid}/comm`, 'utf8'))) process.kill(pid, 'SIGTERM')
  } catch {
    // already gone
  }
  rmSync(pidFile, { force: true })
}
