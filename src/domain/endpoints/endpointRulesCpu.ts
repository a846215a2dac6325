import type { CpuConfig, CpuCreate } from '../../contract/endpoint.js'
import type { Violations } from '../errors.js'

/** What the CPU rules need to know about a flavor. */
export interface CpuFlavorView {
  vcpu: { min: number; max: number }
  ramGbPerVcpu: number
}

/** Names the i-th CPU configuration in errors: `cpu[i]` for endpoints' lists, `cpu` for a pod's single one. */
export type CpuPath = (i: number) => string
const listPath: CpuPath = (i) => `cpu[${i}]`

/** R9, the value rule (422): `vcpuCount` is a power of two (the schema already holds it at >= 2). */
export function checkVcpuValues(
  cpu: readonly CpuCreate[] | undefined,
  invalid: Violations,
  path: CpuPath = listPath,
): void {
  for (const [i, c] of (cpu ?? []).entries()) {
    if ((c.vcpuCount & (c.vcpuCount - 1)) !== 0)
      invalid.add(`${path(i)}.vcpuCount`, `must be a power of two, got ${c.vcpuCount}`)
  }
}

/**
 * R9, the catalog rules (400, like an unknown GPU pool): each `id` is a CPU flavor and `vcpuCount` lies in
 * that flavor's range. Returns the response form, in submitted order, with `memory` derived from the
 * flavor's RAM per vCPU (whole GB, at least 1); clients never send it.
 */
export function resolveCpu(
  cpu: readonly CpuCreate[],
  flavor: (id: string) => CpuFlavorView | undefined,
  conflicts: Violations,
  path: CpuPath = listPath,
): CpuConfig[] {
  const out: CpuConfig[] = []
  for (const [i, c] of cpu.entries()) {
    const f = flavor(c.id)
    if (!f) {
      conflicts.add(`${path(i)}.id`, `${JSON.stringify(c.id)} is not a CPU flavor; see /v2/catalog/cpus`)
      continue
    }
    if (c.vcpuCount < f.vcpu.min || c.vcpuCount > f.vcpu.max) {
      conflicts.add(
        `${path(i)}.vcpuCount`,
        `${c.vcpuCount} is outside the range of ${c.id}, ${f.vcpu.min} to ${f.vcpu.max}`,
      )
    }
    out.push({ id: c.id, vcpuCount: c.vcpuCount, memory: Math.max(1, Math.floor(c.vcpuCount * f.ramGbPerVcpu)) })
  }
  return out
}
