/** The logging the services use: pino's signature (fields first), so main.ts passes its pino logger. */
export interface Log {
  debug(fields: object, message: string): void
  info(fields: object, message: string): void
  warn(fields: object, message: string): void
  error(fields: object, message: string): void
}

/** Discards everything (tests, `logLevel: silent`). */
export const silentLog: Log = { debug() {}, info() {}, warn() {}, error() {} }
