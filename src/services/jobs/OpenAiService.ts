import { jsonValue } from '../../domain/RawJson.js'
import type { JobStatusView } from '../../contract/job.js'
import { DomainError } from '../../domain/errors.js'
import { isFinal } from '../../domain/jobs/jobState.js'
import {
  openAiAnswer,
  openAiJobInput,
  SseEncoder,
  wantsStream,
  type OpenAiAnswer,
} from '../../domain/jobs/openaiJob.js'
import type { Principal } from '../accounts/AccountService.js'
import type { JobService } from './JobService.js'

/** How long one wait on the job lasts before looking again (the client's own timeout governs the whole). */
const WAIT_SLICE_MS = 60_000

/** A request to `/v2/{endpointId}/openai/...`. */
export interface OpenAiRequest {
  principal: Principal
  endpointId: string
  /** The path after `/openai`, e.g. `/v1/chat/completions`. */
  route: string
  body: Record<string, unknown> | undefined
  /** Aborted when the client goes away: the job is cancelled, its worker stops generating. */
  signal: AbortSignal
}

/** What the route answers: JSON with a status, or an SSE stream. */
export type OpenAiResult = { kind: 'json'; answer: OpenAiAnswer } | { kind: 'sse'; events: AsyncIterable<string> }

/**
 * The OpenAI-compatible route of queue endpoints: each request is a job whose input carries the route and
 * body as worker-vllm expects (see domain/openaiJob). Non-streaming requests wait for the job and answer
 * its output; `stream: true` answers SSE built from the job's stream chunks as the worker posts them.
 */
export class OpenAiService {
  constructor(private readonly jobs: JobService) {}

  async handle(r: OpenAiRequest): Promise<OpenAiResult> {
    const input = openAiJobInput(r.route, r.body)
    if (wantsStream(r.body)) {
      // An ordinary asynchronous job: its id stays valid for /status while the client reads the stream.
      const ref = await this.jobs.submit(r.principal, r.endpointId, { input })
      return { kind: 'sse', events: this.events(r, ref.id) }
    }
    // A sync job (short retention) submitted without waiting: the loop below waits in slices.
    const ref = await this.jobs.submit(r.principal, r.endpointId, { input }, { sync: true, waitMs: 0 })
    // Best effort for a client that left: a job that finished meanwhile refuses the cancel (nothing to stop), and
    // a store error leaves the job to run out its own timeout; nobody waits for an answer either way.
    const cancel = () => void this.jobs.cancel(r.principal, r.endpointId, ref.id).catch(() => {})
    r.signal.addEventListener('abort', cancel, { once: true })
    try {
      let view = ref
      while (!isFinal(view.status) && !r.signal.aborted && !this.jobs.closing)
        view = await this.jobs.statusSync(r.principal, r.endpointId, ref.id, WAIT_SLICE_MS)
      return { kind: 'json', answer: this.answer(view) }
    } finally {
      r.signal.removeEventListener('abort', cancel)
    }
  }

  private answer(view: JobStatusView): OpenAiAnswer {
    switch (view.status) {
      case 'COMPLETED':
        return openAiAnswer(jsonValue(view.output))
      case 'FAILED':
        throw new DomainError(
          'internal',
          `the worker failed the request (job ${view.id}): ${view.error ?? 'no error message'}`,
        )
      case 'TIMED_OUT':
        throw new DomainError(
          'gateway_timeout',
          `the request (job ${view.id}) ran past the endpoint's execution timeout`,
        )
      case 'CANCELLED':
        throw new DomainError('unavailable', `the request (job ${view.id}) was cancelled`)
      default:
        throw new DomainError(
          'unavailable',
          `the control plane is stopping; the request (job ${view.id}) was not answered`,
          undefined,
          { 'retry-after': '1' },
        )
    }
  }

  /** SSE text from the job's chunks, as they arrive; ends with `[DONE]`, an error event first if the job failed. */
  private async *events(r: OpenAiRequest, jobId: string): AsyncIterable<string> {
    const sse = new SseEncoder()
    let finished = false
    try {
      for (;;) {
        const view = await this.jobs.stream(r.principal, r.endpointId, jobId, WAIT_SLICE_MS)
        for (const { output } of view.stream) {
          const text = sse.chunk(jsonValue(output))
          if (text) yield text
        }
        if (isFinal(view.status)) {
          finished = true
          const end = sse.finish(
            view.status === 'COMPLETED'
              ? undefined
              : {
                  error: {
                    message: view.error ?? `the request ended ${view.status}`,
                    type: view.status === 'TIMED_OUT' ? 'timeout' : 'server_error',
                    code: null,
                  },
                },
          )
          if (end) yield end
          return
        }
        if (r.signal.aborted || this.jobs.closing) return
      }
    } finally {
      // The client left before the end: stop the worker generating for nobody (best effort, as `cancel` above).
      if (!finished) void this.jobs.cancel(r.principal, r.endpointId, jobId).catch(() => {})
    }
  }
}
