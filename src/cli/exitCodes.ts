/**
 * Exit codes of `hangar`, stable for scripts (documented in docs/cli.md). Anything not listed
 * here (a bug, a 5xx from the server) exits 1.
 */
export const ExitCode = {
  OK: 0,
  /** Unexpected failure: a 5xx answer, a bug, a server that failed to start. */
  ERROR: 1,
  /** The command line itself is wrong: unknown command or option, missing argument, unreadable --input or --from-sqlite. */
  USAGE: 2,
  /** No answer from the server (connection refused, DNS failure). */
  UNREACHABLE: 3,
  /** The server refused the key: 401 or 403. */
  AUTH: 4,
  /** The thing named does not exist (or belongs to another account): 404. */
  NOT_FOUND: 5,
  /** The server rejected the request: 400, 409, 413, 422 (the problem's detail and errors are printed); `import` into a target that holds data. */
  REJECTED: 6,
  /** Rate limited: 429. */
  RATE_LIMITED: 7,
  /** A job the command waited for ended FAILED, CANCELLED or TIMED_OUT. */
  JOB_FAILED: 8,
  /** A job the command waited for was still IN_QUEUE or IN_PROGRESS when the wait ended. */
  JOB_NOT_DONE: 9,
} as const
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode]

/** The exit code for an HTTP error status. */
export function exitCodeForStatus(status: number): ExitCode {
  if (status === 401 || status === 403) return ExitCode.AUTH
  if (status === 404) return ExitCode.NOT_FOUND
  if (status === 429) return ExitCode.RATE_LIMITED
  if (status >= 400 && status < 500) return ExitCode.REJECTED
  return ExitCode.ERROR
}

/** An error a command reports with its own exit code; an empty message prints nothing (the output said it all). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code: ExitCode,
  ) {
    super(message)
  }
}

/** A wrong command line that commander cannot see (bad JSON in --input, an unreadable file). */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, ExitCode.USAGE)
  }
}
