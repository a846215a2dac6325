/** `<major>.<minor>` as the spec writes CUDA versions. */
export const CUDA_VERSION = /^\d+\.\d+$/

/** Compares CUDA versions numerically per component: 12.11 is above 12.2; a bare major counts as `.0`. */
export function compareCuda(a: string, b: string): number {
  const [am, an = 0] = a.split('.').map(Number)
  const [bm, bn = 0] = b.split('.').map(Number)
  return am - bm || an - bn
}
