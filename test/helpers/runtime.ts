/** The OS pid inside a process driver's runtime reference (`process:<host>:<pid>:...`). */
export function pidOf(ref: string | null | undefined): number {
  const m = /^process:[^:]+:(\d+):/.exec(ref ?? '')
  if (!m) throw new Error(`not a process runtime reference: ${ref}`)
  return Number(m[1])
}
