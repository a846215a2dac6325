import type { LogLine } from '../../runtime/WorkerLog.js'

const MAX_LINES = 5
const MAX_LINE_CHARS = 300
/** JavaScript stack frames (`    at f (file:1:2)`), Node's `Node.js v20.1.0`, a caret line under a source line. */
const NOISE = /^\s+at .+|^Node\.js v\d+\.\d+\.\d+$|^\s*\^+\s*$/

/**
 * One line for a table: the reason, then the output line that names the cause (an `Error:`/`Exception`/
 * `not found` line, else the last one), so `exited with code 1` is not all one sees.
 */
export function errorSummary(lastError: string | null | undefined): string | null {
  if (!lastError) return null
  const at = lastError.indexOf('; its last output:\n')
  if (at < 0) return lastError.split('\n')[0]
  const lines = lastError
    .slice(at + '; its last output:\n'.length)
    .split('\n')
    .filter((l) => l.trim() !== '')
  const cause =
    [...lines].reverse().find((l) => /error|exception|cannot|can't|not found|denied|refused|no such/i.test(l)) ??
    lines.at(-1)
  return cause ? `${lastError.slice(0, at)}: ${cause.trim()}` : lastError.slice(0, at)
}

/**
 * The last lines a worker printed, to append to the error of a worker that crashed: the cause ("can't open
 * file 'handler.py'", a Python traceback's last line) is nearly always there, not in the exit code.
 * Empty when it printed nothing.
 */
export function lastOutput(lines: readonly LogLine[]): string {
  // Stack frames and Node's version banner push the message itself out of the last lines: leave them out.
  const tail = lines
    .filter((l) => l.source === 'container' && l.line.trim() !== '' && !NOISE.test(l.line))
    .slice(-MAX_LINES)
  if (tail.length === 0) return ''
  return `; its last output:\n${tail.map((l) => (l.line.length > MAX_LINE_CHARS ? l.line.slice(0, MAX_LINE_CHARS) + '…' : l.line)).join('\n')}`
}
