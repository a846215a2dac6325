import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { Server } from 'node:net'
import { startTicks } from './procfs.js'
import { LAUNCH_ENV, SANDBOX_UID } from './sandbox.js'

/** The forwarder's process name (`/proc/<pid>/comm`): how stopForwarder knows its pid is still the forwarder. */
export const FORWARDER_NAME = 'hangar-forward'

/**
 * Inside the sandbox's namespace, as SANDBOX_UID: listens on each port given at the control plane's address
 * (`localhost`: 127.0.0.1, and ::1 where the namespace has it), hands every listening socket to its parent
 * (Node's IPC passes the descriptor) and ends when the parent lets go. It never accepts a connection itself.
 */
const LISTEN = `const net=require('net');const [address,...ports]=process.argv.slice(1);const both=address==='localhost'
const hosts=both?['127.0.0.1','::1']:[address];let left=ports.length*hosts.length
const fail=(e)=>{process.send({error:String(e&&e.message||e)});process.exit(1)}
const settle=()=>{if(--left===0)process.send({done:true})}
for(const port of ports.map(Number))for(const host of hosts){const s=net.createServer()
s.once('error',(e)=>both&&host==='::1'&&e.code==='EADDRNOTAVAIL'?settle():fail(e))
s.listen({port,host,ipv6Only:true},()=>process.send({port,host},s,(e)=>e?fail(e):settle()))}
process.on('disconnect',()=>process.exit(0))`

/**
 * On the host, as SANDBOX_UID without capabilities: takes the listening sockets over IPC and pipes every
 * connection accepted on one (in the sandbox's namespace) to the same address and port of the host's loopback:
 * the control plane's, as its URL names it; it never connects anywhere else. It ends once the sandbox's init (pid and start
 * ticks, its arguments) is gone, so that it never outlives the sandbox, even when no control plane is there.
 */
const FORWARD = `process.title=${JSON.stringify(FORWARDER_NAME)};const net=require('net');const {pipeline}=require('stream');const fs=require('fs')
const [init,ticks]=process.argv.slice(1)
const started=()=>{try{const s=fs.readFileSync('/proc/'+init+'/stat','utf8');const f=s.slice(s.lastIndexOf(')')+2).split(' ');return f[0]==='Z'?'':f[19]}catch{return ''}}
process.on('message',(m,server)=>{if(m.done){process.send({ready:true});return}
server.on('connection',(inside)=>{const out=net.connect({port:m.port,host:m.host});inside.setNoDelay(true);out.setNoDelay(true);pipeline(inside,out,inside,()=>{inside.destroy();out.destroy()})})})
process.on('disconnect',()=>undefined)
setInterval(()=>{if(started()!==ticks)process.exit(0)},500)`

/** What forwardPorts needs: the sandbox's init, the ports, setpriv's path, and where the forwarder's pid goes. */
export interface ForwardOptions {
  /** The pid of the sandbox's init (bwrap's child): its network namespace is where the ports are served. */
  init: number
  /** The loopback address of the control plane's URL (`127.0.0.1`, `::1`, `localhost`: both of them). */
  address: string
  /** Ports of that address the sandbox reaches at the same address and port of its own (the control plane's). */
  ports: number[]
  /** setpriv, by its absolute path (found at start): the forwarder and the listener drop root through it. */
  setpriv: string
  /** Where the forwarder's pid is written; stopForwarder ends it by this file. */
  pidFile: string
  /** How long the set-up may take, ms. */
  timeoutMs?: number
}

/**
 * Serves `ports` of the host's loopback inside the network namespace of sandbox process `init`, in place of
 * pasta's `-T` (Debian's pasta of 2023-03 stalls for good on data going from the namespace to the host: passt
 * bug 74). A listener started in the namespace (nsenter, then setpriv to SANDBOX_UID) makes the listening
 * sockets and hands them, through Hangar, to a forwarder on the host (setpriv to SANDBOX_UID, no capabilities,
 * no_new_privs, detached so that it outlives a control plane's restart like pasta). Both are node by
 * `process.execPath` running Hangar's own script, with LAUNCH_ENV and numbers for arguments: nothing of the
 * workload. Resolves once the forwarder holds every socket.
 */
export async function forwardPorts(o: ForwardOptions): Promise<void> {
  if (o.ports.length === 0) return
  const ticks = startTicks(o.init)
  if (!ticks) throw new Error(`the sandbox's process ${o.init} is gone`)
  const drop = [
    o.setpriv,
    `--reuid=${SANDBOX_UID}`,
    `--regid=${SANDBOX_UID}`,
    '--clear-groups',
    '--no-new-privs',
    '--bounding-set=-all',
    '--inh-caps=-all',
    '--',
  ]
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
  const forwarder = keepStderr(
    spawn(o.setpriv, [...drop.slice(1), process.execPath, '-e', FORWARD, String(o.init), ticks], {
      env: { ...LAUNCH_ENV },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      // Its own session: a signal to the control plane's group does not end a sandbox's link.
      detached: true,
    }),
  )
  try {
    await deadline(timeoutMs, 'the forwarder did not start', async () => {
      const servers = await receiveServers(listener)
      try {
        await new Promise<void>((resolve, reject) => {
          forwarder.once('error', reject)
          forwarder.once('exit', (code) => reject(new Error(`the forwarder ended (${code}): ${said(forwarder)}`)))
          forwarder.on('message', (m: { ready?: boolean }) => m.ready && resolve())
          for (const { port, host, server } of servers) forwarder.send({ port, host }, server)
          forwarder.send({ done: true })
        })
      } finally {
        // The forwarder holds its own copies now: Hangar's must not accept anything.
        for (const { server } of servers) server.close()
      }
    })
    writeFileSync(o.pidFile, `${forwarder.pid}\n`)
  } catch (err) {
    forwarder.kill('SIGKILL')
    throw new Error(`cannot forward the control plane's port into the sandbox: ${(err as Error).message}`)
  } finally {
    if (listener.connected) listener.disconnect()
    listener.kill('SIGKILL')
  }
  forwarder.removeAllListeners()
  forwarder.stderr?.destroy()
  forwarder.disconnect()
  forwarder.unref()
}

/** The listening sockets the listener hands over, once it has handed them all. */
function receiveServers(listener: ChildProcess): Promise<{ port: number; host: string; server: Server }[]> {
  const servers: { port: number; host: string; server: Server }[] = []
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

/** Ends the forwarder of a workload (by its pid file, if that pid is still the forwarder), and removes the file. */
export function stopForwarder(pidFile: string): void {
  let pid = 0
  try {
    pid = Number(readFileSync(pidFile, 'utf8').trim())
  } catch {
    // No pid file: this workload had no forwarder, or it was ended already.
    return
  }
  try {
    if (pid > 0 && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === FORWARDER_NAME) process.kill(pid, 'SIGTERM')
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
