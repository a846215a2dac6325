import type { JobStatusView } from '../../contract/job.js'

/** The parts of a job its status object is made of. */
export interface JobViewSource {
  id: string
  status: JobStatusView['status']
  createdAt: number
  startedAt: number | null
  completedAt: number | null
  output: unknown
  progress: unknown
  error: string | null
  retries: number
  workerId: string | null
}

/**
 * The status object of /status, /runsync and webhooks. `delayTime` (ms from submission to start) appears
 * once the job started, `executionTime` once it ended; while running, `output` is the last progress update.
 */
export function jobStatusView(job: JobViewSource): JobStatusView {
  const view: JobStatusView = { id: job.id, status: job.status }
  if (job.startedAt !== null) view.delayTime = Math.max(0, job.startedAt - job.createdAt)
  if (job.startedAt !== null && job.completedAt !== null)
    view.executionTime = Math.max(0, job.completedAt - job.startedAt)
  if (job.output !== undefined) view.output = job.output
  else if (job.status === 'IN_PROGRESS' && job.progress !== undefined) view.output = job.progress
  const error = visibleError(job)
  if (error !== null) view.error = error
  if (job.retries > 0) view.retries = job.retries
  if (job.workerId !== null) view.workerId = job.workerId
  return view
}

/**
 * A job's `error` as its readers see it: a COMPLETED job has none. (A job requeued because its worker never
 * acknowledged it carries the reason in `error` while it waits or runs again; a success ends that story.)
 */
export function visibleError(job: { status: JobStatusView['status']; error: string | null }): string | null {
  return job.status === 'COMPLETED' ? null : job.error
}
