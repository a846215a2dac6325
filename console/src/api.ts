import type { Problem } from '../../src/contract/problem.js'

/** A failed API call, carrying the server's RFC 9457 problem. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
  ) {
    super(problem.detail)
  }

  /** The problem's `errors` (each `path: rule`), or the detail alone when it lists none. */
  get messages(): string[] {
    return this.problem.errors?.length ? this.problem.errors : [this.problem.detail]
  }
}

/** The parts of `errors` that name `field` (`workers` matches `workers.max: ...` and `workers: ...`). */
export function errorsOf(err: unknown, field: string): string[] {
  if (!(err instanceof ApiError)) return []
  return (err.problem.errors ?? []).filter(
    (e) => pathOf(e) === field || pathOf(e).startsWith(field + '.') || pathOf(e).startsWith(field + '['),
  )
}

/** The errors of `err` that none of `fields` claims: shown above the form instead of beside a field. */
export function unclaimedErrors(err: unknown, fields: string[]): string[] {
  if (!(err instanceof ApiError)) return err ? [String((err as Error).message ?? err)] : []
  const claimed = new Set(fields.flatMap((f) => errorsOf(err, f)))
  const rest = (err.problem.errors ?? []).filter((e) => !claimed.has(e))
  if (rest.length === 0 && claimed.size === 0) return [err.problem.detail]
  return rest
}

function pathOf(error: string): string {
  const i = error.indexOf(': ')
  return i < 0 ? '' : error.slice(0, i)
}

/** Calls the Hangar API with the signed-in key. Types come from src/contract (the server's own schemas). */
export class Client {
  constructor(
    readonly key: string,
    private readonly base = '',
    /** Called when the server refuses the key (revoked or expired while signed in). */
    private readonly onUnauthorized?: (detail: string) => void,
  ) {}

  get<T>(path: string, signal?: AbortSignal): Promise<T> {
    return this.call<T>('GET', path, undefined, signal)
  }
  post<T>(path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    return this.call<T>('POST', path, body, signal)
  }
  patch<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('PATCH', path, body)
  }
  put<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('PUT', path, body)
  }
  del(path: string): Promise<void> {
    return this.call<void>('DELETE', path)
  }

  /** Headers for requests made outside `call` (the log streams). */
  headers(): Record<string, string> {
    return { authorization: `Bearer ${this.key}` }
  }

  private async call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const headers: Record<string, string> = this.headers()
    if (body !== undefined) headers['content-type'] = 'application/json'
    let res: Response
    try {
      res = await fetch(this.base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
      })
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err
      throw new ApiError(0, {
        title: 'Network error',
        status: 0,
        detail: `the server did not answer: ${(err as Error).message}`,
      })
    }
    const text = await res.text()
    let parsed: unknown
    try {
      parsed = text ? JSON.parse(text) : undefined
    } catch {
      parsed = text
    }
    if (!res.ok) {
      const problem = isProblem(parsed)
        ? parsed
        : {
            title: res.statusText,
            status: res.status,
            detail: typeof parsed === 'string' && parsed ? parsed : `HTTP ${res.status}`,
          }
      if (res.status === 401) this.onUnauthorized?.(problem.detail)
      throw new ApiError(res.status, problem)
    }
    return parsed as T
  }
}

function isProblem(v: unknown): v is Problem {
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof (v as Problem).detail === 'string' &&
    typeof (v as Problem).status === 'number'
  )
}
