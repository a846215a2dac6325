import { CommanderError, InvalidArgumentError } from 'commander'
import { CliError, ExitCode, exitCodeForStatus } from './exitCodes.js'
import { HangarApiError, HangarUnreachableError } from './HangarClient.js'
import { buildProgram } from './program.js'

/** Entry point of the `hangar` command; returns the exit code (see exitCodes.ts). */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram()
  if (argv.length === 0) {
    program.outputHelp()
    return ExitCode.OK
  }
  try {
    await program.parseAsync(argv, { from: 'user' })
    return ExitCode.OK
  } catch (err) {
    return report(err)
  }
}

/** Prints an error for people (the problem's detail and each of its errors) and picks its exit code. */
function report(err: unknown): number {
  // Thrown by an action's own parsing (`--cpu cpu3c`): Commander has not printed it.
  if (err instanceof InvalidArgumentError) {
    console.error(`error: ${err.message}`)
    return ExitCode.USAGE
  }
  if (err instanceof CommanderError) {
    // Commander has printed the help or the error already.
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.exitCode === 0)
      return ExitCode.OK
    return ExitCode.USAGE
  }
  if (err instanceof HangarApiError) {
    const p = err.problem
    // The detail often is the only error: print it once.
    const errors = (p.errors ?? []).filter((e) => !(p.errors?.length === 1 && e === p.detail))
    const lines = [`error: ${p.status} ${p.title}: ${p.detail}`, ...errors.map((e) => `  - ${e}`)]
    if (p.requestId) lines.push(`  (request id ${p.requestId})`)
    console.error(lines.join('\n'))
    return exitCodeForStatus(p.status)
  }
  if (err instanceof HangarUnreachableError) {
    console.error(`error: ${err.message}`)
    return ExitCode.UNREACHABLE
  }
  if (err instanceof CliError) {
    if (err.message) console.error(`error: ${err.message}`)
    return err.code
  }
  console.error(`error: ${err instanceof Error ? err.message : String(err)}`)
  return ExitCode.ERROR
}
