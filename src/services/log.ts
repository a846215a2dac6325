/** The logging the services use: pino's signature (fields first), so main.ts passes its pino logger. */
export interface Log {
  debug(fields: object, message: string): void
  info(fields: object, message: string): void
  warn(fields: object, message: string): void
  error(fields: object, message: string): void
}

/** Discards everything (tests, `logLevel: silent`). */
export const silentLog: Log = { debug() {}, info() {}, warn() {}, error() {} }

/**
 * Writes warnings, errors and notices to stderr as `message {fields}`: for parts started where no logger reaches
 * yet, so their failures are not lost.
 */
export const stderrLog: Log = {
  debug() {},
  info: (fields, message) => console.error(message, JSON.stringify(fields)),
  warn: (fields, message) => console.error(message, JSON.stringify(fields)),
  error: (fields, message) => console.error(message, JSON.stringify(fields)),
}
