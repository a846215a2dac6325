import { spawnSync } from 'node:child_process'
import {
  accessSync,
  constants,
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
} from 'node:fs'
import { dirname, isAbsolute, join, normalize, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Type, type Static } from 'typebox'

/** `runtime.process` in the configuration: how local worker and pod processes are isolated. */
export const ProcessRuntimeConfig = Type.Object(
  {
    sandbox: Type.Enum(['auto', 'bwrap', 'off'], {
      default: 'auto',
      description:
        '`auto`: bubblewrap when it works on this machine (probed at start), none otherwise; `bwrap`: always (the start fails when it cannot run); `off`: never.',
    }),
    bwrap: Type.String({
      minLength: 1,
      default: 'bwrap',
      description: 'The bubblewrap program: a name looked up once at start in PATH, or a path.',
    }),
    network: Type.Enum(['internet', 'control-plane', 'host'], {
      default: 'internet',
      description:
        "A sandboxed program's network: `internet` (its own network namespace through pasta, with outbound connections and the control plane's port; never the host's loopback or other addresses), `control-plane` (its own namespace with only the control plane's port), `host` (the host's network, loopback included: only for single-tenant machines).",
    }),
    pasta: Type.String({
      minLength: 1,
      default: 'pasta',
      description:
        "The pasta program (Debian's passt) that connects a sandbox's network namespace: a name looked up once at start in PATH, or a path.",
    }),
    limits: Type.Boolean({
      default: true,
      description:
        "Each workload in cgroups of its own with its flavor's memory and CPUs and `pidsLimit` processes (needs root, or a delegated cgroup v2), and its container disk and persistent mount stopped at their sizes (checked every `diskCheckIntervalMs`); `false` enforces none of them.",
    }),
    pidsLimit: Type.Integer({
      minimum: 0,
      default: 4096,
      description: 'Processes and threads one workload may have at once (0: no limit).',
    }),
    diskCheckIntervalMs: Type.Integer({
      minimum: 100,
      default: 10_000,
      description:
        "How often the size of a workload's container disk and persistent mount is measured against its limit, ms.",
    }),
    trustTenants: Type.Boolean({
      default: false,
      description:
        "Without a sandbox, workloads of accounts other than the admin's are refused (they could read the control plane's secrets and other accounts' files); `true` runs them anyway, for installations whose every account is trusted.",
    }),
  },
  { additionalProperties: false, default: {} },
)
export type ProcessRuntimeConfig = Static<typeof ProcessRuntimeConfig>

/** How a sandbox reaches the network: the host's own, or a namespace of its own connected by pasta. */
export type SandboxNetwork = { mode: 'host' } | { mode: 'internet' | 'control-plane'; pasta: string }

/**
 * The sandbox this machine gives process workloads, as probed at start: every program by an absolute path,
 * resolved then (never through a workload's PATH).
 */
export type SandboxState =
  | { kind: 'bwrap'; bwrap: string; setpriv: string | null; network: SandboxNetwork }
  | { kind: 'none'; reason: string }

/**
 * The whole environment of every process Hangar starts outside a sandbox (the supervisor, bwrap, pasta, the
 * watcher, nsenter): system directories only, no `LD_*`, nothing of a workload's. A workload's own variables
 * are applied inside, after the drop to the sandbox user (workloadEnvScript).
 */
export const LAUNCH_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
  LANG: 'C.UTF-8',
})

/** Where a workload's variables are, inside its sandbox (a read-only file, written from a file descriptor). */
export const SANDBOX_ENV_FILE = '/run/hangar-env'

/** File descriptors a sandboxed workload's supervisor is given: bwrap's info, the go-ahead, the variables. */
export const FD = { info: 3, go: 4, env: 5 } as const

/** The uid and gid tenant programs run as when Hangar runs as root (`nobody` on Debian). */
export const SANDBOX_UID = 65534

// src/runtime/process/ and dist/runtime/process/ both sit three levels below the package root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/+$/, '')

/** The system a program sees, read-only: directories (or their symlinks, as on merged-/usr systems). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']
/** What of /etc a program needs (names, TLS roots, time zone, the dynamic linker), never the rest. */
const ETC_ENTRIES = [
  'resolv.conf',
  'hosts',
  'host.conf',
  'nsswitch.conf',
  'gai.conf',
  'passwd',
  'group',
  'localtime',
  'timezone',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'alternatives',
  'ssl',
  'ca-certificates',
  'ca-certificates.conf',
  'pki',
  'mime.types',
  'protocols',
  'services',
  'os-release',
]

/** One bind of a host path into the sandbox, at `target` (its own path when not given). */
export interface SandboxBind {
  path: string
  target?: string
  writable: boolean
}

/**
 * The first process inside the sandbox (Hangar's own argv, the fixed LAUNCH_ENV, as root when Hangar is root):
 * it waits for the go-ahead (the network is connected), closes the descriptors it was given, then runs the
 * next stage. A missing go-ahead (the control plane died, the network failed) ends it before any tenant code.
 */
const STAGE_WAIT = `read -r go <&${FD.go}; exec ${FD.info}>&- ${FD.go}<&- ${FD.env}<&-; [ "$go" = go ] || { echo "hangar: the sandbox was not set up (no go-ahead): not starting" >&2; exit 125; }; exec "$@"`
/** The last stage, as the workload's user: its variables from the file, then its command (found through its PATH). */
const STAGE_ENV = '. "$0" && exec "$@"'

/**
 * The argv that runs `command` in a sandbox seeing only `binds` and the read-only system, with its own PID, IPC,
 * UTS and (unless the network is the host's) network namespaces, /proc, /dev and a private /tmp, killed when
 * its supervisor dies. bwrap starts with LAUNCH_ENV and clears it (`--clearenv`); the workload's variables come
 * as a file on descriptor FD.env, bound read-only at SANDBOX_ENV_FILE and read by the last stage only.
 * As an ordinary user: in a user namespace of its own (and no further ones). When Hangar runs as root, bwrap
 * sets the sandbox up as root (so it reaches paths below private directories such as a 0700 data dir) and the
 * program then runs as the unprivileged SANDBOX_UID on the host too, without capabilities and with
 * no_new_privs (setpriv, by its absolute path, with LAUNCH_ENV): files it writes are nobody's.
 */
export function sandboxArgv(
  state: Extract<SandboxState, { kind: 'bwrap' }>,
  binds: SandboxBind[],
  chdir: string,
  command: string[],
  opts: { gpus?: string[]; handshake?: boolean; wrap?: string[] } = {},
): string[] {
  const root = process.getuid?.() === 0
  const handshake = opts.handshake ?? true
  // As a user: a user namespace of its own, where the program is SANDBOX_UID (the user itself outside).
  const user = root
    ? []
    : ['--unshare-user', '--disable-userns', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID)]
  const args = [
    ...(opts.wrap ?? []),
    state.bwrap,
    ...user,
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--die-with-parent',
  ]
  // Its own network: made by bwrap (as root; pasta connects it), or by pasta around bwrap (`wrap`, as a user).
  if (state.network.mode !== 'host' && !opts.wrap) args.push('--unshare-net')
  if (handshake) args.push('--info-fd', String(FD.info))
  args.push('--clearenv', '--setenv', 'PATH', LAUNCH_ENV.PATH)
  // Private, writable /tmp and /dev/shm (Python's multiprocessing, PyTorch's data loaders).
  args.push(
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--perms',
    '1777',
    '--tmpfs',
    '/dev/shm',
    '--perms',
    '1777',
    '--tmpfs',
    '/tmp',
  )
  for (const dir of SYSTEM_DIRS) {
    let st
    try {
      st = lstatSync(dir)
    } catch {
      // This system has no such directory: nothing to bind.
      continue
    }
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir)
    else if (st.isDirectory()) args.push('--ro-bind', dir, dir)
  }
  let etc: string[] = []
  try {
    etc = readdirSync('/etc')
  } catch {
    // no /etc: nothing to show
  }
  // A workload given GPUs gets the device nodes of those GPUs, the driver's control nodes and /sys (read-only;
  // the driver's libraries are in /usr); not another GPU's node, which CUDA_VISIBLE_DEVICES alone would not keep
  // from it.
  if (opts.gpus && opts.gpus.length > 0) {
    for (const dev of gpuDevices(opts.gpus)) args.push('--dev-bind', dev, dev)
    args.push('--ro-bind-try', '/sys', '/sys')
  }
  // Directories bwrap makes are root's alone: the program (SANDBOX_UID) must traverse /etc.
  args.push('--perms', '0755', '--dir', '/etc')
  for (const name of etc)
    if (ETC_ENTRIES.includes(name) || /^python3/.test(name))
      args.push('--ro-bind-try', join('/etc', name), join('/etc', name))
  if (handshake)
    args.push('--perms', '0755', '--dir', '/run', '--perms', '0444', '--ro-bind-data', String(FD.env), SANDBOX_ENV_FILE)
  // The directories leading to each bind, traversable (bwrap would make them private to root).
  const placed = binds.map((b) => ({ ...b, target: b.target ?? b.path }))
  const parents = new Set<string>()
  for (const b of placed)
    for (let d = dirname(b.target); d !== '/' && d !== '.'; d = dirname(d))
      if (!isSystemPath(d) && d !== '/tmp' && d !== '/etc') parents.add(d)
  for (const d of [...parents].sort())
    if (!placed.some((b) => within(d, b.target))) args.push('--perms', '0755', '--dir', d)
  for (const b of placed.sort((x, y) => x.target.length - y.target.length))
    args.push(b.writable ? '--bind' : '--ro-bind', b.path, b.target)
  args.push('--chdir', chdir, '--')
  if (!handshake) return [...args, ...command]
  args.push('/bin/sh', '-c', STAGE_WAIT, 'hangar-sandbox')
  if (root) {
    if (!state.setpriv) throw new Error('setpriv was not found at start: a sandbox cannot drop root')
    args.push(
      state.setpriv,
      `--reuid=${SANDBOX_UID}`,
      `--regid=${SANDBOX_UID}`,
      '--clear-groups',
      '--no-new-privs',
      '--bounding-set=-all',
      '--inh-caps=-all',
      '--',
    )
  }
  return [...args, '/bin/sh', '-c', STAGE_ENV, SANDBOX_ENV_FILE, ...command]
}

/**
 * The argv that runs `command` outside a sandbox (the admin's, or every account's where tenants are trusted):
 * its variables from the file on descriptor FD.env, never the supervisor's.
 */
export function unsandboxedArgv(command: string[]): string[] {
  return [
    '/bin/sh',
    '-c',
    `. /dev/fd/${FD.env} && exec ${FD.env}<&- ${FD.info}>&- ${FD.go}<&- && exec "$@"`,
    'hangar-env',
    ...command,
  ]
}

/** Variable names a POSIX shell (and so every program's getenv) takes: letters, digits and `_`, not first a digit. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * A workload's variables as the shell script its last stage reads (`export NAME='value'`, values quoted so that
 * nothing in them is code). A name that is no variable name is refused, with the name.
 */
export function workloadEnvScript(env: Record<string, string>): string {
  const lines: string[] = []
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name))
      throw new Error(
        `env ${JSON.stringify(name)} cannot be set for a local process: a variable name has letters, digits and _ only, and does not start with a digit`,
      )
    if (value.includes('\0'))
      throw new Error(`env ${name} holds a NUL character, which no process environment can carry`)
    lines.push(`export ${name}='${value.replaceAll("'", "'\\''")}'`)
  }
  return `${lines.join('\n')}\n`
}

/**
 * Where a workload may place a mount inside its sandbox: an absolute, normalized path that is not `/` and lies
 * in none of the places the sandbox itself is made of (the system, /etc, /proc, /dev, /sys, /run, /tmp), so that
 * nothing a tenant writes can stand in for a program the sandbox runs as root before the drop (setpriv, sh).
 */
export function checkMountTarget(target: string): string | null {
  const t = target.replace(/\/+$/, '')
  if (t === '') return 'a mount path cannot be /'
  if (!isAbsolute(t) || normalize(t) !== t)
    return `mount path ${JSON.stringify(target)} must be an absolute path without . or .. parts`
  const reserved = [...SYSTEM_DIRS, '/etc', '/proc', '/dev', '/sys', '/run', '/tmp']
  for (const r of reserved)
    if (within(t, r)) return `mount path ${JSON.stringify(target)} lies in ${r}, which the sandbox provides itself`
  return null
}

/**
 * An absolute path of `program`: as given when it holds a slash, else the first executable of that name in
 * `pathList` (the operator's PATH at start, never a workload's). Null when there is none.
 */
export function resolveProgram(program: string, pathList: string = process.env.PATH ?? LAUNCH_ENV.PATH): string | null {
  const candidates = program.includes('/')
    ? [resolve(program)]
    : pathList
        .split(':')
        .filter((d) => isAbsolute(d))
        .map((d) => join(d, program))
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK)
      if (statSync(c).isFile()) return c
    } catch {
      // not there
    }
  }
  return null
}

/** The NVIDIA nodes every GPU workload needs: the driver's control, memory and mode-setting devices. */
const NVIDIA_SHARED_NODES = ['nvidiactl', 'nvidia-uvm', 'nvidia-uvm-tools', 'nvidia-modeset']

/**
 * The NVIDIA device nodes a workload given the GPUs of indices `ids` may open: `/dev/nvidia<minor>` of each (the
 * driver's "Device Minor", in the order nvidia-smi numbers GPUs, by PCI bus id; the index itself where the driver
 * says nothing) and the shared nodes. None without a driver.
 */
export function gpuDevices(ids: string[], procDir = '/proc/driver/nvidia/gpus', devDir = '/dev'): string[] {
  let present: string[] = []
  try {
    present = readdirSync(devDir)
  } catch {
    // No device directory to look in: no GPU device nodes to give.
    return []
  }
  let minors: string[] = []
  try {
    minors = readdirSync(procDir)
      .sort()
      .map((bus) => /Device Minor:\s*(\d+)/.exec(readFileSync(join(procDir, bus, 'information'), 'utf8'))?.[1] ?? '')
  } catch {
    // no driver information: indices are the minors
  }
  const nodes = ids.map((id) => `nvidia${minors[Number(id)] || id}`)
  return [...nodes, ...NVIDIA_SHARED_NODES].filter((n) => present.includes(n)).map((n) => join(devDir, n))
}

/**
 * Read-only binds the program cannot read when Hangar runs as root (it runs as SANDBOX_UID, as "others"): a
 * directory without r-x for others (mkdtemp's 0700), a file without r.
 */
export function unreadableBySandbox(binds: SandboxBind[]): string[] {
  if (process.getuid?.() !== 0) return []
  return binds
    .filter((b) => !b.writable)
    .filter((b) => {
      try {
        const st = statSync(b.path)
        if (st.uid === SANDBOX_UID) return false
        return st.isDirectory() ? (st.mode & 0o005) !== 0o005 : (st.mode & 0o004) === 0
      } catch {
        // Missing: bwrap says so itself when it binds it, more precisely than a permission warning would.
        return false
      }
    })
    .map((b) => b.path)
}

/** True when `inner` is `outer` or lies below it. */
export function within(inner: string, outer: string): boolean {
  return inner === outer || inner.startsWith(outer.endsWith(sep) ? outer : outer + sep)
}

function isSystemPath(p: string): boolean {
  return SYSTEM_DIRS.some((d) => within(p, d))
}

/**
 * The host paths an image's program needs, read-only: Hangar's own code (the sample workers and the worker SDK
 * run from it), node itself, and for a configured image the absolute paths its command names (a script brings
 * its directory, for its sibling modules) and the directories of its env's path lists (PYTHONPATH,
 * NODE_PATH...). Only operator-configured commands bring paths: an endpoint's own entrypoint never does. Nothing
 * that holds the data dir, lies inside it or lies in the system (already there) is bound.
 */
export function programPaths(
  configured: { command: string[]; env?: Record<string, string> } | undefined,
  dataDir: string,
): string[] {
  const found = new Set<string>([
    join(PACKAGE_ROOT, 'dist'),
    join(PACKAGE_ROOT, 'node_modules'),
    join(PACKAGE_ROOT, 'package.json'),
    process.execPath,
  ])
  const consider = (p: string, withDir: boolean) => {
    if (!isAbsolute(p)) return
    const abs = resolve(p)
    let st
    try {
      st = statSync(abs)
    } catch {
      // Not on this system: nothing to bind.
      return
    }
    found.add(abs)
    if (withDir && st.isFile()) found.add(dirname(abs))
  }
  for (const arg of configured?.command ?? []) consider(arg, true)
  for (const value of Object.values(configured?.env ?? {})) for (const part of value.split(':')) consider(part, false)
  const paths = [...found].filter(
    (p) => existsSync(p) && !isSystemPath(p) && !within(dataDir, p) && !within(p, dataDir) && p !== '/',
  )
  // A path inside another one is there already.
  return paths.filter((p) => !paths.some((q) => q !== p && within(p, q)))
}

/**
 * Resolves bwrap (and as root setpriv, and for a network of its own pasta) to absolute paths, then runs bwrap
 * once with the options every workload gets, as the user workloads run as: it works on this machine, or the
 * reason it does not (no such program, user namespaces disabled, ...).
 */
export function probeSandbox(
  config: Pick<ProcessRuntimeConfig, 'sandbox' | 'bwrap'> & Partial<Pick<ProcessRuntimeConfig, 'network' | 'pasta'>>,
): SandboxState {
  if (config.sandbox === 'off') return { kind: 'none', reason: 'runtime.process.sandbox is "off"' }
  const bwrap = resolveProgram(config.bwrap)
  if (!bwrap) return { kind: 'none', reason: `cannot run ${JSON.stringify(config.bwrap)}: not found in PATH` }
  const root = process.getuid?.() === 0
  const setpriv = root ? resolveProgram('setpriv', LAUNCH_ENV.PATH) : null
  if (root && !setpriv)
    return {
      kind: 'none',
      reason:
        'setpriv (util-linux) was not found in the system directories: as root, a sandbox needs it to drop to the sandbox user',
    }
  const mode = config.network ?? 'internet'
  let network: SandboxNetwork = { mode: 'host' }
  if (mode !== 'host') {
    const pasta = resolveProgram(config.pasta ?? 'pasta')
    if (!pasta)
      return {
        kind: 'none',
        reason: `cannot run ${JSON.stringify(config.pasta ?? 'pasta')} (Debian's passt), which gives each sandbox a network of its own: install passt, or set runtime.process.network to "host" on a single-tenant machine`,
      }
    network = { mode, pasta }
  }
  const state = { kind: 'bwrap' as const, bwrap, setpriv, network }
  // As a user, pasta makes the namespaces itself: it needs user namespaces and /dev/net/tun.
  if (!root && network.mode !== 'host') {
    const r = spawnSync(
      network.pasta,
      [
        '--quiet',
        '--config-net',
        '-t',
        'none',
        '-T',
        'none',
        '-u',
        'none',
        '-U',
        'none',
        '--',
        '/bin/sh',
        '-c',
        'exit 0',
      ],
      { timeout: 10_000, encoding: 'utf8', env: { ...LAUNCH_ENV }, stdio: ['ignore', 'ignore', 'pipe'] },
    )
    if (r.status !== 0) {
      const said = (r.stderr ?? '')
        .split('\n')
        .filter((l) => l && !/syslog/.test(l))
        .join('; ')
      return {
        kind: 'none',
        reason: `${JSON.stringify(network.pasta)} cannot give a sandbox its own network as this user (${said || r.error?.message || `exit ${r.status}`}): it needs user namespaces and /dev/net/tun open to this user (Debian's default is 0666)`,
      }
    }
  }
  const [program, ...args] = sandboxArgv(state, [], '/', ['/bin/sh', '-c', 'exit 0'], { handshake: false })
  const r = spawnSync(program, args, {
    timeout: 10_000,
    encoding: 'utf8',
    env: { ...LAUNCH_ENV },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  if (r.error) return { kind: 'none', reason: `cannot run ${JSON.stringify(bwrap)}: ${r.error.message}` }
  if (r.status !== 0)
    return {
      kind: 'none',
      reason: `${JSON.stringify(bwrap)} failed its probe (exit ${r.status ?? r.signal}): ${(r.stderr ?? '').trim().slice(0, 300) || 'no message'}`,
    }
  return state
}
