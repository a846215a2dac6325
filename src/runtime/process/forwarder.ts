import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import type { PublishedPort } from '../RuntimeDriver.js'
import { startTicks } from './procfs.js'
import { LAUNCH_ENV, SANDBOX_UID } from './sandbox.js'

/**
 * Relays of a sandbox's TCP links, as root, in place of Debian's pasta of 2023-03, whose `-T` and `-t` splices
 * stall for good on big bodies (passt bug 74; bench/RESULTS.md): forwardPorts (the control plane's port into the
 * sandbox) and publishPorts (the program's ports out of it). pasta keeps outbound connections (`internet`).
 */

/** A relay's process name (`/proc/<pid>/comm`): how stopForwarder knows its pid is still a relay. */
export const FORWARDER_NAME = 'hangar-forward'

/**
 * Inside the sandbox's namespace, as SANDBOX_UID: listens on each port given at the control plane's address
 * (`localhost`: 127.0.0.1, and ::1 where the namespace has it), hands every listening socket to its parent
 * (Node's IPC passes the descriptor) and ends when the parent lets go. It binds when told (once the namespace
 * is set up: ports below 1024 need that), so that it can start alongside pasta. It never accepts a connection.
 */
const LISTEN = `const net=require('net');const [address,...ports]=process.argv.slice(1);const both=address==='localhost'
const hosts=both?['127.0.0.1','::1']:[address];let left=ports.length*hosts.length
const fail=(e)=>{process.send({error:String(e&&e.message||e)});process.exit(1)}
const settle=()=>{if(--left===0)process.send({done:true})}
process.once('message',()=>{for(const port of ports.map(Number))for(const host of hosts){const s=net.createServer()
s.once('error',(e)=>both&&host==='::1'&&e.code==='EADDRNOTAVAIL'?settle():fail(e))
s.listen({port,host,ipv6Only:true},()=>process.send({port,host},s,(e)=>e?fail(e):settle()))}})
process.on('disconnect',()=>process.exit(0))`

/**
 * The most connections the control plane's relay carries at once from a sandbox on each of its listening sockets;
 * past it a new one is closed as soon as accepted. Without a cap a sandbox that opens connections by the thousand
 * has each carried to the control plane, which spends a descriptor on every one: a few workloads would exhaust
 * the control plane's descriptors (its accept loop, its database, every tenant's requests). A worker's SDK holds
 * a few per job slot. Published ports have none: their connections come from the host, into the sandbox.
 */
export const RELAY_MAX_CONNECTIONS = 512

/**
 * The relay, as SANDBOX_UID without capabilities: takes listening sockets over IPC, each with where its
 * connections go (a port and address, reached in the relay's own network namespace), and pipes every connection
 * accepted on one there, `max` at most at once where given; it never connects anywhere else. A port it cannot
 * connect to (an endpoint's declared port out of range) closes that connection, not the relay and its other ports. It ends once the
 * sandbox's init (pid and start ticks, its first arguments) is gone, so that it never outlives the sandbox, even
 * when no control plane is there to end it.
 */
const RELAY = `process.title=${JSON.stringify(FORWARDER_NAME)};const net=require('net');const {pipeline}=require('stream');const fs=require('fs')
const [init,ticks,max]=process.argv.slice(1)
const started=()=>{try{const s=fs.readFileSync('/proc/'+init+'/stat','utf8');const f=s.slice(s.lastIndexOf(')')+2).split(' ');return f[0]==='Z'?'':f[19]}catch{return ''}}
process.on('message',(m,server)=>{if(m.done){process.send({ready:true});return}
if(max)server.maxConnections=Number(max);server.on('connection',(from)=>{let to;try{to=net.connect({port:m.port,host:m.host})}catch{from.destroy();return}from.setNoDelay(true);to.setNoDelay(true);pipeline(from,to,from,()=>{from.destroy();to.destroy()})})})
process.on('disconnect',()=>undefined)
setInterval(()=>{if(started()!==ticks)process.exit(0)},500)`

/** What forwardPorts needs: the sandbox's init, the ports, setpriv's path, and where the relay's pid goes. */
export interface ForwardOptions {
  /** The pid of the sandbox's init (bwrap's child): its network namespace is where the ports are served. */
  init: number
  /** The loopback address of the control plane's URL (`127.0.0.1`, `::1`, `localhost`: both of them). */
  address: string
  /** Ports of that address the sandbox reaches at the same address and port of its own (the control plane's). */
  ports: number[]
  /** setpriv, by its absolute path (found at start): the relay and the listener drop root through it. */
  setpriv: string
  /** Where the relay's pid is written; stopForwarder ends it by this file. */
  pidFile: string
  /** How long the set-up may take, ms. */
  timeoutMs?: number
}

/**
 * Serves `ports` of the host's loopback inside the network namespace of sandbox process `init`, in place of
 * pasta's `-T` (Debian's pasta of 2023-03 stalls for good on data going from the namespace to the host: passt
 * bug 74). A listener started in the namespace (nsenter, then setpriv to SANDBOX_UID) makes the listening
 * sockets and hands them, through Hangar, to a relay on the host (setpriv to SANDBOX_UID, no capabilities,
 * no_new_privs). Both are node by `process.execPath` running Hangar's own script, with LAUNCH_ENV and numbers
 * and the URL's loopback address for arguments: nothing of the workload. Resolves once the relay holds every
 * socket.
 */
export function forwardPorts(o: ForwardOptions): Relays {
  if (o.ports.length === 0) return NO_RELAYS
  const drop = dropTo(o.setpriv)
  const timeoutMs = o.timeoutMs ?? 10_000
  const listener = keepStderr(
    spawn(
      '/usr/bin/nsenter',
      [
        `--net=/proc/${o.init}/ns/net`,
        '--',
        ...drop,
        process.execPath,
        '-e',
        LISTEN,
        o.address,
        ...o.ports.map(String),
      ],
      { env: { ...LAUNCH_ENV }, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] },
    ),
  )
  const relay = spawnRelay(drop, o.init, RELAY_MAX_CONNECTIONS)
  const end = () => {
    if (listener.connected) listener.disconnect()
    listener.kill('SIGKILL')
  }
  return {
    start: async () => {
      try {
        ended(listener, 'the listener')
        const servers = await deadline(timeoutMs, 'the listener did not start', () => {
          const got = receiveServers(listener)
          listener.send({ listen: true })
          return got
        })
        // Each socket's connections go to the same address and port of the host.
        await handOver(relay, servers, o.pidFile, timeoutMs)
      } catch (err) {
        relay.kill('SIGKILL')
        throw new Error(`cannot forward the control plane's port into the sandbox: ${(err as Error).message}`)
      } finally {
        end()
      }
    },
    kill: () => {
      end()
      relay.kill('SIGKILL')
    },
  }
}

/** Relays spawned (node starting, the slow part) but not yet given their sockets: `start` does, `kill` undoes. */
export interface Relays {
  /** Gives the relay its sockets; resolves once it holds them and its pid file is written. */
  start(): Promise<void>
  /** Ends whatever was spawned, when the set-up failed before start. */
  kill(): void
}

const NO_RELAYS: Relays = { start: async () => undefined, kill: () => undefined }

/**
 * Publishes each port the program listens on inside the sandbox of `init` (`privatePort` at its 127.0.0.1) on
 * the host's address `ip`:`publicPort`, in place of pasta's `-t`, which stalls on big bodies going into the
 * namespace as `-T` does out of it. Hangar listens on the host; a relay in the namespace (nsenter, then setpriv
 * to SANDBOX_UID) takes those sockets and connects inside. Its pid goes to `pidFile`.
 */
export function publishPorts(o: {
  init: number
  published: PublishedPort[]
  setpriv: string
  pidFile: string
  timeoutMs?: number
}): Relays {
  if (o.published.length === 0) return NO_RELAYS
  const timeoutMs = o.timeoutMs ?? 10_000
  const relay = spawnRelay(['/usr/bin/nsenter', `--net=/proc/${o.init}/ns/net`, '--', ...dropTo(o.setpriv)], o.init)
  return {
    start: async () => {
      const servers: Relayed[] = []
      try {
        for (const p of o.published) {
          const server = createServer()
          servers.push({ port: p.privatePort, host: '127.0.0.1', server })
          await new Promise<void>((resolve, reject) => {
            server.once('error', reject)
            server.listen({ port: p.publicPort, host: p.ip }, resolve)
          })
        }
        await handOver(relay, servers, o.pidFile, timeoutMs)
      } catch (err) {
        for (const { server } of servers) server.close()
        relay.kill('SIGKILL')
        throw new Error(`cannot publish the sandbox's ports: ${(err as Error).message}`)
      }
    },
    kill: () => relay.kill('SIGKILL'),
  }
}

/** A listening socket and where its connections go. */
interface Relayed {
  port: number
  host: string
  server: Server
}

/**
 * Spawns a relay with `prefix` before node (the privilege drop, and the namespace to enter), detached in a
 * session of its own so that it outlives a control plane's restart as pasta does; `max` caps its connections.
 */
function spawnRelay(prefix: string[], init: number, max?: number): ChildProcess {
  // A gone init reads as no ticks: the relay then ends at its first check.
  const ticks = startTicks(init) ?? 'gone'
  return keepStderr(
    spawn(
      prefix[0],
      [...prefix.slice(1), process.execPath, '-e', RELAY, String(init), ticks, ...(max ? [String(max)] : [])],
      {
        env: { ...LAUNCH_ENV },
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
        detached: true,
      },
    ),
  )
}

/** Hands `sockets` to the relay, closes Hangar's copies, writes its pid (and start ticks) to `pidFile` and lets it go. */
async function handOver(relay: ChildProcess, sockets: Relayed[], pidFile: string, timeoutMs: number): Promise<void> {
  try {
    ended(relay, 'the relay')
    await deadline(timeoutMs, 'the relay did not start', async () => {
      await new Promise<void>((resolve, reject) => {
        relay.once('error', reject)
        relay.once('exit', (code) => reject(new Error(`the relay ended (${code}): ${said(relay)}`)))
        relay.on('message', (m: { ready?: boolean }) => m.ready && resolve())
        for (const { port, host, server } of sockets) relay.send({ port, host }, server)
        relay.send({ done: true })
      })
    })
    // With its start ticks: a pid reused by another workload's relay (same name) is not that one's to end.
    writeFileSync(pidFile, `${relay.pid} ${startTicks(relay.pid!) ?? ''}\n`)
  } finally {
    // The relay holds its own copies now (or is to be killed): Hangar's must not accept anything.
    for (const { server } of sockets) server.close()
  }
  relay.removeAllListeners()
  relay.stderr?.destroy()
  relay.disconnect()
  relay.unref()
}

/** Throws when `child` has already ended (before its 'exit' could be listened for). */
function ended(child: ChildProcess, what: string): void {
  if (child.exitCode !== null || child.signalCode !== null)
    throw new Error(`${what} ended (${child.exitCode ?? child.signalCode}): ${said(child)}`)
}

/** setpriv's arguments that drop root to SANDBOX_UID, without capabilities and with no_new_privs. */
function dropTo(setpriv: string): string[] {
  return [
    setpriv,
    `--reuid=${SANDBOX_UID}`,
    `--regid=${SANDBOX_UID}`,
    '--clear-groups',
    '--no-new-privs',
    '--bounding-set=-all',
    '--inh-caps=-all',
    '--',
  ]
}

/** The listening sockets the listener hands over, once it has handed them all. */
function receiveServers(listener: ChildProcess): Promise<Relayed[]> {
  const servers: Relayed[] = []
  return new Promise((resolve, reject) => {
    listener.once('error', reject)
    listener.once('exit', (code) => reject(new Error(`the listener ended (${code}): ${said(listener)}`)))
    listener.on('message', (m: { port?: number; host?: string; error?: string; done?: boolean }, server?: Server) => {
      if (m.error) reject(new Error(m.error))
      else if (m.done) resolve(servers)
      else if (server && m.port && m.host) servers.push({ port: m.port, host: m.host, server })
    })
  })
}

/**
 * Ends a relay of a workload (by its pid file, if that pid is still that relay: its name and start ticks), and
 * removes the file. A relay ends by itself with its sandbox, leaving its file while no control plane runs; its pid
 * may since be another workload's relay.
 */
export function stopForwarder(pidFile: string): void {
  let pid = 0
  let ticks: string | undefined
  try {
    const [p, t] = readFileSync(pidFile, 'utf8').trim().split(/\s+/)
    pid = Number(p)
    ticks = t
  } catch {
    // No pid file: this workload had no forwarder, or it was ended already.
    return
  }
  try {
    const same = ticks === undefined || startTicks(pid) === ticks
    if (pid > 0 && same && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === FORWARDER_NAME)
      process.kill(pid, 'SIGTERM')
  } catch {
    // already gone
  }
  rmSync(pidFile, { force: true })
}

const stderrOf = new WeakMap<ChildProcess, string>()

/** Keeps what a child writes on stderr (the first KiB), for the error that says why it ended. */
function keepStderr(child: ChildProcess): ChildProcess {
  child.stderr?.on('data', (d: Buffer) => stderrOf.set(child, ((stderrOf.get(child) ?? '') + d).slice(0, 1024)))
  return child
}

/** What a child wrote on stderr so far. */
function said(child: ChildProcess): string {
  return (stderrOf.get(child) ?? '').trim().slice(0, 300) || 'no message'
}

async function deadline<T>(ms: number, what: string, f: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([
      f(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
}
