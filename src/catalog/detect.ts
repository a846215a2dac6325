import { execFile } from 'node:child_process'
import { availableParallelism, totalmem } from 'node:os'
import { promisify } from 'node:util'
import type { HostGpuSpec } from './config.js'

const run = promisify(execFile)

/** What this machine offers: cores, memory in GB and its NVIDIA GPUs (grouped by model). */
export interface MachineInfo {
  cores: number
  memoryGb: number
  gpus: HostGpuSpec[]
}

/** Reads this machine once at start; a missing or failing nvidia-smi means no GPUs. */
export async function detectMachine(detectGpus: boolean): Promise<MachineInfo> {
  return {
    cores: availableParallelism(),
    memoryGb: Math.floor(totalmem() / 1024 ** 3),
    gpus: detectGpus ? await detectNvidiaGpus() : [],
  }
}

async function detectNvidiaGpus(): Promise<HostGpuSpec[]> {
  let list: string
  let header: string
  try {
    list = (await run('nvidia-smi', ['--query-gpu=index,name', '--format=csv,noheader'], { timeout: 10_000 })).stdout
    header = (await run('nvidia-smi', [], { timeout: 10_000 })).stdout
  } catch {
    // No nvidia-smi, or no driver behind it: this machine has no GPUs to offer (the fleet shows CPUs only).
    return []
  }
  return parseNvidiaSmi(list, header)
}

/** Groups `index, name` lines by model and reads the driver's CUDA version from the banner. */
export function parseNvidiaSmi(list: string, banner: string): HostGpuSpec[] {
  const cuda = /CUDA Version:\s*(\d+\.\d+)/.exec(banner)?.[1] ?? null
  const byName = new Map<string, number[]>()
  for (const line of list.split('\n')) {
    const m = /^\s*(\d+)\s*,\s*(.+?)\s*$/.exec(line)
    if (!m) continue
    const indices = byName.get(m[2]) ?? []
    indices.push(Number(m[1]))
    byName.set(m[2], indices)
  }
  return [...byName].map(([typeId, indices]) => ({
    typeId,
    count: indices.length,
    cudaVersion: cuda,
    virtual: false,
    indices,
  }))
}
