/** A table column: its header and how to read a row's cell. */
export interface Column<T> {
  header: string
  value: (row: T) => unknown
}

/** Options every client command understands for its output. */
export interface OutputOptions {
  json?: boolean
}

/** One cell as text: absent values as "-", objects as compact JSON. */
export function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '-'
  if (typeof v === 'object') return JSON.stringify(v)
  return String(v)
}

/** Rows as an aligned text table for people, or a note when there are none. */
export function renderTable<T>(rows: readonly T[], columns: readonly Column<T>[], empty = '(none)'): string {
  if (rows.length === 0) return empty
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r))))
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i].length)))
  const line = (vals: string[]) =>
    vals
      .map((v, i) => (i === vals.length - 1 ? v : v.padEnd(widths[i])))
      .join('  ')
      .trimEnd()
  return [line(columns.map((c) => c.header.toUpperCase())), ...cells.map(line)].join('\n')
}

/** An object's fields as `key: value` lines for people; nested objects are compact JSON. */
export function renderObject(obj: object): string {
  const entries = Object.entries(obj)
  const width = Math.max(0, ...entries.map(([k]) => k.length))
  return entries.map(([k, v]) => `${(k + ':').padEnd(width + 1)} ${cell(v)}`).join('\n')
}

/** Prints `value` as JSON with --json, else the table (for a list) or the key/value lines (for an object). */
export function print<T>(
  opts: OutputOptions,
  value: unknown,
  human?: { rows: readonly T[]; columns: readonly Column<T>[]; empty?: string } | (() => string),
): void {
  if (opts.json) {
    process.stdout.write(JSON.stringify(value, null, 2) + '\n')
    return
  }
  let text: string
  if (typeof human === 'function') text = human()
  else if (human) text = renderTable(human.rows, human.columns, human.empty)
  else if (value !== null && typeof value === 'object') text = renderObject(value)
  else text = cell(value)
  process.stdout.write(text + '\n')
}
