import pino from 'pino'

/**
 * Marks the fields of a one-line-per-request log entry (the request log): on a terminal they are already in
 * the message, so they are not printed again under it. A symbol, so JSON lines never carry it.
 */
export const REQUEST_LINE = Symbol('hangar.requestLine')

/** Fields whose text keeps its line breaks on a terminal (a crash's stderr tail, a failed start's reason). */
const MULTILINE_FIELDS = ['reason', 'lastError', 'error']

/** How log lines are written: `auto` is readable lines on a terminal and JSON otherwise (files, collectors). */
export type LogFormat = 'auto' | 'json' | 'pretty'

/**
 * The server's logger. Pretty lines are formatted in this thread (no transport worker), so nothing logged
 * just before exit is lost; pino-pretty is loaded only when used.
 *
 * @example await createLogger('info', 'auto') // readable on a TTY, JSON when piped
 */
export async function createLogger(
  level: string,
  format: LogFormat,
  stream: NodeJS.WriteStream = process.stdout,
): Promise<pino.Logger> {
  const readable = format === 'pretty' || (format === 'auto' && stream.isTTY === true)
  if (!readable) return pino({ level }, stream)
  const { default: pretty } = await import('pino-pretty')
  const multiline = (v: unknown) =>
    typeof v === 'string' && v.includes('\n')
      ? `\n${v
          .replace(/\n+$/, '')
          .split('\n')
          .map((l) => `      ${l}`)
          .join('\n')}`
      : JSON.stringify(v)
  return pino(
    {
      level,
      // A request is one line on a terminal: its method, path and status are the message; the time is appended.
      formatters: { log: (o: Record<string | symbol, unknown>) => (o[REQUEST_LINE] ? { requestMs: o.ms } : o) },
    },
    pretty({
      destination: stream,
      sync: true,
      colorize: stream.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,reqId,requestMs',
      messageFormat: (log, key) =>
        log.requestMs !== undefined ? `${String(log[key])} ${String(log.requestMs)} ms` : String(log[key]),
      customPrettifiers: Object.fromEntries(MULTILINE_FIELDS.map((f) => [f, multiline])),
    }),
  )
}
