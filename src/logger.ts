import pino from 'pino'

/** How log lines are written: `auto` is readable lines on a terminal and JSON otherwise (files, collectors). */
export type LogFormat = 'auto' | 'json' | 'pretty'

/**
 * The server's logger. Pretty lines are formatted in this thread (no transport worker), so nothing logged
 * just before exit is lost; pino-pretty is loaded only when used.
 *
 * @example await createLogger('info', 'auto') // readable on a TTY, JSON when piped
 */
export async function createLogger(level: string, format: LogFormat, stream: NodeJS.WriteStream = process.stdout): Promise<pino.Logger> {
  const readable = format === 'pretty' || (format === 'auto' && stream.isTTY === true)
  if (!readable) return pino({ level }, stream)
  const { default: pretty } = await import('pino-pretty')
  return pino({ level }, pretty({ destination: stream, sync: true, colorize: stream.isTTY === true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }))
}
