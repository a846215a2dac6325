import type { LogLine } from '../runtime/WorkerLog.js'

const MAX_LINES = 5
const MAX_LINE_CHARS = 300

/**
 * The last lines a worker printed, to append to the error of a worker that crashed: the cause ("can't open
 * file 'handler.py'", a Python traceback's last line) is nearly always there, not in the exit code.
 * Empty when it printed nothing.
 */
export function lastOutput(lines: readonly LogLine[]): string {
  const tail = lines.filter((l) => l.source === 'container' && l.line.trim() !== '').slice(-MAX_LINES)
  if (tail.length === 0) return ''
  return `; its last output:\n${tail.map((l) => (l.line.length > MAX_LINE_CHARS ? l.line.slice(0, MAX_LINE_CHARS) + '…' : l.line)).join('\n')}`
}
