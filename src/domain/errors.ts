/** What went wrong, independent of transport; `api/problem.ts` maps each kind to an HTTP status. */
export type ErrorKind =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'unprocessable'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'too_many_requests'
  | 'unavailable'
  | 'internal'
  | 'bad_gateway'
  | 'gateway_timeout'

/** Raised below `api/` for any failure a caller should see; never carries internals. */
export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly detail: string,
    /** Individual failures, each `path: rule` (e.g. `gpu.excludedTypes[1]: "X" is not in pools A, B`). */
    readonly errors?: string[],
    /** Extra response headers, e.g. Retry-After. */
    readonly headers?: Record<string, string>,
  ) {
    super(detail)
    this.name = 'DomainError'
  }
  /** Extension members of the problem (RFC 9457 §3.2), e.g. the quota a refused request would pass. */
  get extensions(): Record<string, unknown> | undefined {
    return undefined
  }
}

/** Shorthand for the common "not found" case, phrased the same for missing and foreign resources. */
export function notFound(what: string, id: string): DomainError {
  return new DomainError('not_found', `${what} ${JSON.stringify(id)} was not found`)
}

/** Collects rule violations so a request reports all of them at once. */
export class Violations {
  readonly items: string[] = []
  add(path: string, message: string): void {
    this.items.push(`${path}: ${message}`)
  }
  get empty(): boolean {
    return this.items.length === 0
  }
  /** Throws a DomainError of `kind` listing every violation, if any. */
  throwIfAny(kind: 'bad_request' | 'unprocessable', summary = 'the request breaks the rules listed in errors'): void {
    if (this.items.length === 0) return
    throw new DomainError(kind, this.items.length === 1 ? this.items[0] : summary, [...this.items])
  }
}
