import type { ComponentChildren } from 'preact'
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { errorsOf, unclaimedErrors } from './api.js'

/** Loads data on mount (and when `deps` change); `reload` fetches again, `every` ms keeps it fresh. */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], every?: number) {
  const [data, setData] = useState<T | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [tick, setTick] = useState(0)
  const reload = useCallback(() => setTick((t) => t + 1), [])
  useEffect(() => {
    const ac = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    const run = () =>
      load(ac.signal)
        .then((d) => {
          setData(d)
          setError(undefined)
        })
        .catch((err) => {
          if ((err as Error).name !== 'AbortError') setError(err)
        })
        .finally(() => {
          if (every && !ac.signal.aborted) timer = setTimeout(run, every)
        })
    void run()
    return () => {
      ac.abort()
      clearTimeout(timer)
    }
  }, [...deps, tick])
  return { data, error, reload }
}

/** Runs an action, keeping its error and whether it is in flight. */
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<unknown>) {
  const [error, setError] = useState<unknown>(undefined)
  const [busy, setBusy] = useState(false)
  const run = async (...args: A): Promise<boolean> => {
    setBusy(true)
    setError(undefined)
    try {
      await action(...args)
      return true
    } catch (err) {
      setError(err)
      return false
    } finally {
      setBusy(false)
    }
  }
  return { run, error, busy, clear: () => setError(undefined) }
}

/** A problem's messages that no field claimed, above a form or a list. */
export function Problems({ error, fields = [] }: { error: unknown; fields?: string[] }) {
  const messages = unclaimedErrors(error, fields)
  if (messages.length === 0) return null
  return (
    <div class="problem" role="alert">
      {messages.map((m) => (
        <div key={m}>{m}</div>
      ))}
    </div>
  )
}

/** A labelled form field with the server's errors for `name` shown beside it. */
export function Field({
  label,
  name,
  error,
  hint,
  children,
}: {
  label: string
  name: string
  error?: unknown
  hint?: string
  children: ComponentChildren
}) {
  const errs = errorsOf(error, name)
  return (
    <label class={errs.length ? 'field invalid' : 'field'} data-field={name}>
      <span class="label">{label}</span>
      {children}
      {hint && <span class="hint">{hint}</span>}
      {errs.map((e) => (
        <span class="field-error" key={e}>
          {e}
        </span>
      ))}
    </label>
  )
}

export function Page({
  title,
  actions,
  children,
}: {
  title: string
  actions?: ComponentChildren
  children: ComponentChildren
}) {
  return (
    <section class="page">
      <header class="page-head">
        <h1>{title}</h1>
        <div class="actions">{actions}</div>
      </header>
      {children}
    </section>
  )
}

/** Pretty JSON in a scrollable block. */
export function Json({ value }: { value: unknown }) {
  return <pre class="json">{value === undefined ? '' : JSON.stringify(value, null, 2)}</pre>
}

export function Loading({ error, what }: { error: unknown; what: string }) {
  return error ? <Problems error={error} /> : <p class="muted">Loading {what}…</p>
}

/** A status word with a colour per meaning. */
export function Badge({ value }: { value: string }) {
  return <span class={`badge badge-${value.toLowerCase()}`}>{value}</span>
}

/** Deletes after the browser's confirmation dialog. */
export function confirmDelete(what: string): boolean {
  return window.confirm(`Delete ${what}? This cannot be undone.`)
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—'
  const d = new Date(iso)
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString()
}

/** Keeps the latest value of a prop for callbacks created once. */
export function useLatest<T>(value: T) {
  const ref = useRef(value)
  ref.current = value
  return ref
}

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement

/**
 * The value typed or chosen in the form control an event came from (`onInput={(e) => setName(inputValue(e))}`);
 * `T` narrows it for selects whose options are a known set.
 */
export function inputValue<T extends string = string>(e: Event): T {
  return (e.currentTarget as Control).value as T
}

/** Whether the checkbox an event came from is checked. */
export function checkedOf(e: Event): boolean {
  return (e.currentTarget as HTMLInputElement).checked
}

/** Copies `text` to the clipboard, saying so for a moment. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false)
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text)
    } catch {
      // No clipboard (plain http other than localhost): select-and-copy by hand still works.
      return
    }
    setCopied(true)
    setTimeout(() => setCopied(false), 1500)
  }
  return (
    <button type="button" class="copy" onClick={() => void copy()} aria-label={`${label}: ${text}`}>
      {copied ? 'Copied' : label}
    </button>
  )
}

/** What an unknown console URL shows. */
export function NotFoundView({
  what = 'There is no page at this address.',
  back = { href: '/console/endpoints', label: 'Back to endpoints' },
}: {
  what?: string
  back?: { href: string; label: string }
}) {
  return (
    <section class="page not-found" role="alert">
      <h1>Not found</h1>
      <p>{what}</p>
      <p>
        <a href={back.href}>{back.label}</a>
      </p>
    </section>
  )
}
