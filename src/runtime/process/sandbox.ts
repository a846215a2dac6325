import { spawnSync } from 'node:child_process'
import { existsSync, lstatSync, readdirSync, readlinkSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Type, type Static } from 'typebox'

/** `runtime.process` in the configuration: how local worker and pod processes are isolated. */
export const ProcessRuntimeConfig = Type.Object(
  {
    /**
     * `auto`: bubblewrap when it works on this machine (probed at start), none otherwise; `bwrap`: always
     * (the start fails when it cannot run); `off`: never.
     */
    sandbox: Type.Enum(['auto', 'bwrap', 'off'], { default: 'auto' }),
    /** The bubblewrap program (a name looked up in PATH, or a path). */
    bwrap: Type.String({ minLength: 1, default: 'bwrap' }),
    /**
     * Without a sandbox, workloads of accounts other than the admin's are refused (they could read the control
     * plane's secrets and other accounts' files); `true` runs them anyway, for installations whose every account
     * is trusted.
     */
    trustTenants: Type.Boolean({ default: false }),
  },
  { additionalProperties: false, default: {} },
)
export type ProcessRuntimeConfig = Static<typeof ProcessRuntimeConfig>

/** The sandbox this machine gives process workloads, as probed at start. */
export type SandboxState = { kind: 'bwrap'; bwrap: string } | { kind: 'none'; reason: string }

/** The uid and gid tenant programs run as when Hangar runs as root (`nobody` on Debian). */
export const SANDBOX_UID = 65534

// src/runtime/process/ and dist/runtime/process/ both sit three levels below the package root.
const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/+$/, '')

/** The system a program sees, read-only: directories (or their symlinks, as on merged-/usr systems). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']
/** What of /etc a program needs (names, TLS roots, time zone, the dynamic linker), never the rest. */
const ETC_ENTRIES = [
  'resolv.conf', 'hosts', 'host.conf', 'nsswitch.conf', 'gai.conf', 'passwd', 'group', 'localtime', 'timezone', 'ld.so.cache', 'ld.so.conf',
  'ld.so.conf.d', 'alternatives', 'ssl', 'ca-certificates', 'ca-certificates.conf', 'pki', 'mime.types', 'protocols', 'services', 'os-release',
]

/** One bind of a host path into the sandbox, at the same path. */
export interface SandboxBind {
  path: string
  writable: boolean
}

/**
 * The argv that runs `command` in a sandbox seeing only `binds` (at their host paths) and the read-only system,
 * with its own PID, IPC and UTS namespaces, /proc, /dev and a private /tmp, killed when its supervisor dies.
 * As an ordinary user: in a user namespace of its own (and no further ones). When Hangar runs as root, bwrap
 * sets the sandbox up as root (so it reaches paths below private directories such as a 0700 data dir) and the
 * program then runs as the unprivileged SANDBOX_UID on the host too, without capabilities and with
 * no_new_privs (setpriv): files it writes and its peer credentials on the shared network are nobody's.
 */
export function sandboxArgv(bwrap: string, binds: SandboxBind[], chdir: string, command: string[], opts: { gpus?: boolean } = {}): string[] {
  const root = process.getuid?.() === 0
  const args = [bwrap, ...(root ? [] : ['--unshare-user', '--disable-userns']), '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--die-with-parent']
  // Private, writable /tmp and /dev/shm (Python's multiprocessing, PyTorch's data loaders).
  args.push('--proc', '/proc', '--dev', '/dev', '--perms', '1777', '--tmpfs', '/dev/shm', '--perms', '1777', '--tmpfs', '/tmp')
  for (const dir of SYSTEM_DIRS) {
    let st
    try {
      st = lstatSync(dir)
    } catch {
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
  // A workload given GPUs gets the NVIDIA device nodes and /sys (read-only; the driver's libraries are in /usr).
  if (opts.gpus) {
    for (const dev of gpuDevices()) args.push('--dev-bind', dev, dev)
    args.push('--ro-bind-try', '/sys', '/sys')
  }
  // Directories bwrap makes are root's alone: the program (SANDBOX_UID) must traverse /etc.
  args.push('--perms', '0755', '--dir', '/etc')
  for (const name of etc) if (ETC_ENTRIES.includes(name) || /^python3/.test(name)) args.push('--ro-bind-try', join('/etc', name), join('/etc', name))
  // The directories leading to each bind, traversable (bwrap would make them private to root).
  const parents = new Set<string>()
  for (const b of binds) for (let d = dirname(b.path); d !== '/' && d !== '.'; d = dirname(d)) if (!isSystemPath(d) && d !== '/tmp' && d !== '/etc') parents.add(d)
  for (const d of [...parents].sort()) if (!binds.some((b) => within(d, b.path))) args.push('--perms', '0755', '--dir', d)
  for (const b of [...binds].sort((x, y) => x.path.length - y.path.length)) args.push(b.writable ? '--bind' : '--ro-bind', b.path, b.path)
  args.push('--chdir', chdir, '--')
  if (root) args.push('setpriv', `--reuid=${SANDBOX_UID}`, `--regid=${SANDBOX_UID}`, '--clear-groups', '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all', '--')
  return [...args, ...command]
}

/** The NVIDIA device nodes of this machine (`/dev/nvidia*`, `/dev/nvidia-caps`), none without a driver. */
export function gpuDevices(): string[] {
  try {
    return readdirSync('/dev')
      .filter((n) => /^nvidia/.test(n))
      .map((n) => join('/dev', n))
  } catch {
    return []
  }
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
export function programPaths(configured: { command: string[]; env?: Record<string, string> } | undefined, dataDir: string): string[] {
  const found = new Set<string>([join(PACKAGE_ROOT, 'dist'), join(PACKAGE_ROOT, 'node_modules'), join(PACKAGE_ROOT, 'package.json'), process.execPath])
  const consider = (p: string, withDir: boolean) => {
    if (!isAbsolute(p)) return
    const abs = resolve(p)
    let st
    try {
      st = statSync(abs)
    } catch {
      return
    }
    found.add(abs)
    if (withDir && st.isFile()) found.add(dirname(abs))
  }
  for (const arg of configured?.command ?? []) consider(arg, true)
  for (const value of Object.values(configured?.env ?? {})) for (const part of value.split(':')) consider(part, false)
  const paths = [...found].filter((p) => existsSync(p) && !isSystemPath(p) && !within(dataDir, p) && !within(p, dataDir) && p !== '/')
  // A path inside another one is there already.
  return paths.filter((p) => !paths.some((q) => q !== p && within(p, q)))
}

/**
 * Runs bwrap once with the options every workload gets, as the user workloads run as: it works on this
 * machine, or the reason it does not (no such program, user namespaces disabled, ...).
 */
export function probeSandbox(config: ProcessRuntimeConfig): SandboxState {
  if (config.sandbox === 'off') return { kind: 'none', reason: 'runtime.process.sandbox is "off"' }
  const [program, ...args] = sandboxArgv(config.bwrap, [], '/', ['/bin/sh', '-c', 'exit 0'])
  const r = spawnSync(program, args, { timeout: 10_000, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] })
  if (r.error) return { kind: 'none', reason: `cannot run ${JSON.stringify(config.bwrap)}: ${r.error.message}` }
  if (r.status !== 0) return { kind: 'none', reason: `${JSON.stringify(config.bwrap)} failed its probe (exit ${r.status ?? r.signal}): ${(r.stderr ?? '').trim().slice(0, 300) || 'no message'}` }
  return { kind: 'bwrap', bwrap: config.bwrap }
}
