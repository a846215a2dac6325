import { existsSync } from 'node:fs'

/**
 * Where the browser tests find Chromium: $HANGAR_CHROMIUM, else Debian's /usr/bin/chromium (installed by
 * .ci/setup-chromium.sh). Returns null when there is none, with the reason to print.
 */
export function findChromium(): { path: string } | { path: null; reason: string } {
  const wanted = process.env.HANGAR_CHROMIUM
  if (wanted) {
    // Set explicitly (CI sets it after installing): a wrong path is an error, not a reason to skip.
    if (!existsSync(wanted)) throw new Error(`HANGAR_CHROMIUM=${wanted} does not exist`)
    return { path: wanted }
  }
  for (const p of ['/usr/bin/chromium', '/usr/bin/chromium-browser']) if (existsSync(p)) return { path: p }
  return {
    path: null,
    reason: 'no Chromium: run .ci/setup-chromium.sh (apt-get install chromium) or set HANGAR_CHROMIUM',
  }
}
