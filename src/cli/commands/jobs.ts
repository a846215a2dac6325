import type { Command } from 'commander'
import type { Health, JobRequest, JobStatus, JobStatusView } from '../../contract/job.js'
import { isFinal } from '../../domain/jobs/jobState.js'
import { clientCommand, clientFor, intOption, readJsonObject, type ClientOptions } from '../clientCommand.js'
import { CliError, ExitCode } from '../exitCodes.js'
import { print, renderObject } from '../output.js'

interface SubmitOptions extends ClientOptions {
  input?: string
  webhook?: string
  executionTimeout?: number
  ttl?: number
  lowPriority?: boolean
}

function withSubmitFlags(cmd: Command): Command {
  return cmd
    .option('-i, --input <json>', 'the job input: a JSON object, @file or - (stdin); default {}')
    .option('--webhook <url>', 'POSTed the final status when the job ends')
    .option('--execution-timeout <ms>', 'policy.executionTimeout', intOption)
    .option('--ttl <ms>', 'policy.ttl: total lifespan from submission', intOption)
    .option('--low-priority', 'policy.lowPriority: do not scale workers up for this job')
}

function requestOf(opts: SubmitOptions): JobRequest {
  const policy = {
    ...(opts.executionTimeout !== undefined ? { executionTimeout: opts.executionTimeout } : {}),
    ...(opts.ttl !== undefined ? { ttl: opts.ttl } : {}),
    ...(opts.lowPriority ? { lowPriority: true } : {}),
  }
  return {
    input: opts.input ? readJsonObject(opts.input, '--input') : {},
    ...(opts.webhook ? { webhook: opts.webhook } : {}),
    ...(Object.keys(policy).length ? { policy } : {}),
  }
}

/** The exit code a waited-for job ends a command with. */
function jobExit(status: JobStatus): ExitCode {
  if (status === 'COMPLETED') return ExitCode.OK
  return isFinal(status) ? ExitCode.JOB_FAILED : ExitCode.JOB_NOT_DONE
}

/** Prints a job status view and fails the command unless the job COMPLETED. */
function printWaited(opts: ClientOptions, view: JobStatusView): void {
  print(opts, view)
  const code = jobExit(view.status)
  if (code !== ExitCode.OK) throw new CliError('', code)
}

function printHealth(h: Health): string {
  return renderObject({
    'jobs in queue': h.jobs.inQueue,
    'jobs in progress': h.jobs.inProgress,
    'jobs completed': h.jobs.completed,
    'jobs failed': h.jobs.failed,
    'jobs retried': h.jobs.retried,
    workers: `${h.workers.running} running, ${h.workers.idle} idle, ${h.workers.initializing} initializing, ${h.workers.ready} ready, ${h.workers.throttled} throttled, ${h.workers.unhealthy} unhealthy`,
  })
}

/** `hangar jobs`: the queue operations of an endpoint. */
export function registerJobs(program: Command): void {
  const group = program
    .command('jobs')
    .description("an endpoint's job queue: run, wait, stream, cancel, retry, purge, health")
    .addHelpText(
      'after',
      '\nA command that waits for a job (runsync, status --wait, stream) exits 8 when it ended FAILED,\nCANCELLED or TIMED_OUT, and 9 when it had not ended yet.',
    )
  withSubmitFlags(clientCommand(group, 'run <endpoint>', 'queue a job and print its id at once')).action(
    async (endpoint: string, opts: SubmitOptions) => {
      const ref = await clientFor(opts).run(endpoint, requestOf(opts))
      print(opts, ref)
    },
  )
  withSubmitFlags(clientCommand(group, 'runsync <endpoint>', 'run a job and wait for its result'))
    .option('--wait <ms>', 'how long the server holds the request (1000-300000; default: its own)', intOption)
    .action(async (endpoint: string, opts: SubmitOptions & { wait?: number }) => {
      printWaited(opts, await clientFor(opts).runsync(endpoint, requestOf(opts), opts.wait))
    })
  clientCommand(group, 'status <endpoint> <job>', "a job's status and output")
    .option('--wait <ms>', 'wait up to this long for the job to end (1000-300000)', intOption)
    .action(async (endpoint: string, job: string, opts: ClientOptions & { wait?: number }) => {
      const view = await clientFor(opts).status(endpoint, job, opts.wait)
      if (opts.wait) printWaited(opts, view)
      else print(opts, view)
    })
  clientCommand(
    group,
    'stream <endpoint> <job>',
    "print a job's streamed output as it comes, until the job ends (one JSON line per chunk with --json)",
  ).action(async (endpoint: string, job: string, opts: ClientOptions) => {
    const api = clientFor(opts)
    for (;;) {
      const view = await api.stream(endpoint, job, 10_000)
      for (const chunk of view.stream) {
        process.stdout.write(
          opts.json
            ? JSON.stringify(chunk) + '\n'
            : (typeof chunk.output === 'string' ? chunk.output : JSON.stringify(chunk.output)) + '\n',
        )
      }
      if (isFinal(view.status)) {
        if (view.status !== 'COMPLETED')
          throw new CliError(`job ${job} ${view.status}${view.error ? `: ${view.error}` : ''}`, ExitCode.JOB_FAILED)
        return
      }
    }
  })
  clientCommand(group, 'cancel <endpoint> <job>', 'cancel a job').action(
    async (endpoint: string, job: string, opts: ClientOptions) => {
      print(opts, await clientFor(opts).cancel(endpoint, job))
    },
  )
  clientCommand(group, 'retry <endpoint> <job>', 'queue a FAILED or TIMED_OUT job again, same id').action(
    async (endpoint: string, job: string, opts: ClientOptions) => {
      print(opts, await clientFor(opts).retry(endpoint, job))
    },
  )
  clientCommand(group, 'purge <endpoint>', 'remove every job still waiting in the queue').action(
    async (endpoint: string, opts: ClientOptions) => {
      print(opts, await clientFor(opts).purgeQueue(endpoint))
    },
  )
  clientCommand(group, 'health <endpoint>', 'job and worker counts of an endpoint').action(
    async (endpoint: string, opts: ClientOptions) => {
      const h = await clientFor(opts).health(endpoint)
      print(opts, h, () => printHealth(h))
    },
  )
}
