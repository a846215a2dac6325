/** The HTTP status of a Docker Engine API error (dockerode sets `statusCode`), if any. */
export function statusOf(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null && 'statusCode' in err
    ? Number((err as { statusCode: unknown }).statusCode)
    : undefined
}

/** The engine's own message of an error (its JSON `message`), else the error's. */
export function messageOf(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'json' in err) {
    const json = (err as { json?: { message?: string } | null }).json
    if (json?.message) return json.message
  }
  return err instanceof Error ? err.message : String(err)
}
