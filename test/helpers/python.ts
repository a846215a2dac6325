import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'

/** The unmodified `runpod` Python SDK (with its two stand-ins), kept beside the project in ../shared. */
export const RUNPOD_PYTHON = resolve(import.meta.dirname, '..', '..', '..', 'shared', 'clients', 'runpod-python')

/** PYTHONPATH that makes `import runpod` load that SDK. */
export const RUNPOD_PYTHONPATH = `${join(RUNPOD_PYTHON, 'sdk')}:${join(RUNPOD_PYTHON, 'shims')}`

/** True when a missing Python SDK must fail the tests instead of skipping them (CI). */
export const PYTHON_REQUIRED = process.env.HANGAR_REQUIRE_PYTHON === '1'

/**
 * The interpreter that runs the workers: Debian's (where `apt-get install python3-aiohttp ...` puts the SDK's
 * dependencies), else the first python3 on PATH (a pyenv or venv python may come first and lack them).
 */
export const PYTHON = ['/usr/bin/python3', 'python3'].find((py) => importsSdk(py) === null) ?? 'python3'

function importsSdk(python: string): string | null {
  const r = spawnSync(python, ['-c', 'import runpod.serverless'], {
    env: {
      ...process.env,
      PYTHONPATH: RUNPOD_PYTHONPATH,
      PYTHONDONTWRITEBYTECODE: '1',
      HOME: process.env.HOME ?? '/tmp',
    },
    encoding: 'utf8',
  })
  if (r.error) return `${python} cannot run: ${r.error.message}`
  if (r.status !== 0) return `${python} cannot import the runpod SDK: ${r.stderr.trim().split('\n').pop()}`
  return null
}

/**
 * Why Python workers on the runpod SDK cannot run here (no python3, the SDK folder or its Debian packages
 * missing), or null when they can. With HANGAR_REQUIRE_PYTHON=1 a reason throws instead.
 */
export function pythonSdkMissing(): string | null {
  const reason = ((): string | null => {
    if (!existsSync(join(RUNPOD_PYTHON, 'sdk', 'runpod'))) return `the runpod SDK is not at ${RUNPOD_PYTHON}`
    const why = importsSdk(PYTHON)
    return (
      why &&
      `${why} (apt-get install python3-aiohttp python3-requests python3-tomli python3-tomlkit python3-paramiko python3-backoff python3-cpuinfo)`
    )
  })()
  if (reason && PYTHON_REQUIRED)
    throw new Error(`${reason} (HANGAR_REQUIRE_PYTHON=1: the Python worker tests must run)`)
  return reason
}

/** An `images` config entry that runs test/python/worker.py with `handler` on the runpod SDK. */
export function pythonWorkerImage(
  handler: string,
  env: Record<string, string> = {},
): { command: string[]; env: Record<string, string> } {
  return {
    command: [PYTHON, '-u', resolve(import.meta.dirname, '..', 'python', 'worker.py')],
    env: {
      PYTHONPATH: RUNPOD_PYTHONPATH,
      HANDLER: handler,
      RUNPOD_SKIP_GPU_CHECK: 'true',
      RUNPOD_SKIP_AUTO_SYSTEM_CHECKS: 'true',
      PYTHONDONTWRITEBYTECODE: '1',
      ...env,
    },
  }
}
