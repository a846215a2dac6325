/**
 * References to an account's secrets in env values, in the hosted platform's syntax:
 * `{{ RUNPOD_SECRET_<name> }}` (spaces inside the braces optional), anywhere in a value
 * (`Bearer {{ RUNPOD_SECRET_token }}`). Pure: resolution with the values is the caller's.
 */
const REF = /\{\{\s*RUNPOD_SECRET_([A-Za-z0-9_-]+)\s*\}\}/g

/** The secret names referenced by `env`'s values, each once, in order of first appearance. */
export function secretRefs(env: Record<string, string>): string[] {
  const names = new Set<string>()
  for (const value of Object.values(env)) for (const m of value.matchAll(REF)) names.add(m[1])
  return [...names]
}

/** The env variables that reference `name`, for errors that say where a missing secret is used. */
export function variablesReferencing(env: Record<string, string>, name: string): string[] {
  return Object.entries(env)
    .filter(([, v]) => [...v.matchAll(REF)].some((m) => m[1] === name))
    .map(([k]) => k)
}

/** `env` with every reference replaced by its secret's value (`values` must hold every referenced name). */
export function substituteSecrets(
  env: Record<string, string>,
  values: ReadonlyMap<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(env)) out[k] = v.replace(REF, (_, name: string) => values.get(name) ?? '')
  return out
}
