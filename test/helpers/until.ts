/** Polls `probe` until it returns a value other than undefined/false; fails after `timeoutMs`. */
export async function until<T>(
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 20_000,
  what = 'condition',
): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const v = await probe()
    if (v !== undefined && v !== false) return v
    if (Date.now() > end) throw new Error(`${what} not reached within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 40))
  }
}
