import { DomainError } from '../errors.js'

/**
 * The container command as stored on templates, pods and endpoints. Invariant: `args` always
 * describes exactly `entrypoint` + `cmd` (parsing `args` gives them back), so responses can return
 * `args` "as stored" next to the deconstructed arrays without the two ever telling different stories.
 */
export interface ContainerCommand {
  /** The raw string: a shell string (CMD) or a JSON object string `{"entrypoint": [...], "cmd": [...]}`; `""` when unset. */
  args: string
  /** CMD in exec form; `[]` = the image's. */
  cmd: string[]
  /** ENTRYPOINT in exec form; `[]` = the image's. */
  entrypoint: string[]
}

/** What a create or update body may say about the command; an omitted field leaves that part unchanged. */
export interface CommandInput {
  args?: string
  cmd?: string[]
  entrypoint?: string[]
}

const EMPTY: ContainerCommand = { args: '', cmd: [], entrypoint: [] }

/**
 * Applies a body's `args` / `cmd` / `entrypoint` to the current command (none on create).
 *
 * - `args` replaces the whole command: a bare shell string is CMD (no ENTRYPOINT override), split into
 *   arguments like a POSIX shell would; a JSON object string sets `entrypoint` and/or `cmd` (a key it
 *   leaves out is `[]`); `""` clears both.
 * - `cmd` / `entrypoint` alone replace just that part (`[]` clears it); `args` is then rewritten to
 *   describe the result (a quoted shell string, or the JSON form when an ENTRYPOINT is set).
 * - `args` together with `cmd` or `entrypoint` is accepted only when they describe the same command;
 *   otherwise 400 (a cross-field rule, like the spec's other conflicts), naming the disagreeing field.
 * - An `args` that cannot be read (unterminated quote, a `{...}` that is not a JSON object of string
 *   arrays) is 422: a single field that fails validation.
 *
 * @example resolveCommand({ args: 'python -u "my handler.py"' }) // cmd: ['python', '-u', 'my handler.py']
 */
export function resolveCommand(input: CommandInput, current: ContainerCommand = EMPTY): ContainerCommand {
  if (input.args !== undefined) {
    const parsed = parseArgs(input.args)
    const conflicts: string[] = []
    for (const key of ['entrypoint', 'cmd'] as const) {
      const given = input[key]
      if (given !== undefined && !sameList(given, parsed[key])) {
        conflicts.push(
          `${key}: ${JSON.stringify(given)} disagrees with args, which describes ${key} ${JSON.stringify(parsed[key])}`,
        )
      }
    }
    if (conflicts.length) {
      throw new DomainError(
        'bad_request',
        conflicts.length === 1 ? conflicts[0] : 'args disagrees with entrypoint and cmd',
        conflicts,
      )
    }
    return { args: input.args, ...parsed }
  }
  if (input.cmd === undefined && input.entrypoint === undefined)
    return { ...current, cmd: [...current.cmd], entrypoint: [...current.entrypoint] }
  const cmd = input.cmd ?? current.cmd
  const entrypoint = input.entrypoint ?? current.entrypoint
  return { args: formatArgs({ cmd, entrypoint }), cmd: [...cmd], entrypoint: [...entrypoint] }
}

/** Deconstructs a raw `args` string into ENTRYPOINT and CMD; throws a 422 DomainError when it cannot be read. */
export function parseArgs(args: string): { cmd: string[]; entrypoint: string[] } {
  const trimmed = args.trim()
  if (trimmed === '') return { cmd: [], entrypoint: [] }
  // A leading brace or bracket is taken as JSON and must be valid: silently splitting a mistyped JSON
  // object into shell words would run a command nobody wrote.
  if (trimmed.startsWith('{')) return parseJsonArgs(trimmed)
  if (trimmed.startsWith('[')) {
    throw unreadable('a JSON array is not accepted; send it as cmd, or as {"cmd": [...]}')
  }
  return { cmd: splitShellWords(args), entrypoint: [] }
}

function parseJsonArgs(text: string): { cmd: string[]; entrypoint: string[] } {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw unreadable(`starts with "{" but is not valid JSON (${(err as Error).message})`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw unreadable('must be a JSON object')
  const out = { cmd: [] as string[], entrypoint: [] as string[] }
  const problems: string[] = []
  for (const [key, v] of Object.entries(value)) {
    if (key !== 'cmd' && key !== 'entrypoint') {
      problems.push(`args: unknown key ${JSON.stringify(key)}; only "entrypoint" and "cmd" are allowed`)
    } else if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
      problems.push(`args: ${key} must be an array of strings`)
    } else {
      out[key] = v as string[]
    }
  }
  if (problems.length)
    throw new DomainError(
      'unprocessable',
      problems.length === 1 ? problems[0] : 'args is not a valid command',
      problems,
    )
  return out
}

function unreadable(why: string): DomainError {
  const line = `args: ${why}`
  return new DomainError('unprocessable', line, [line])
}

/**
 * Splits a command line into words the way a POSIX shell does before running it: blanks separate words;
 * single quotes keep everything literally; double quotes keep everything but `\` before `$ \` " \\` and
 * newline; an unquoted `\` escapes the next character; `\`+newline joins lines. Nothing is expanded
 * (`$HOME`, `*`, `~` stay as written) and `;`, `|`, `&&`, `#` are ordinary characters, because no shell
 * runs the result: it becomes the exec-form CMD.
 *
 * @example splitShellWords(`echo 'a b' "c\\"d" e\\ f`) // ['echo', 'a b', 'c"d', 'e f']
 */
export function splitShellWords(line: string): string[] {
  const words: string[] = []
  let word = ''
  let inWord = false
  let i = 0
  while (i < line.length) {
    const c = line[i]
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      if (inWord) words.push(word)
      word = ''
      inWord = false
      i++
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1)
      if (end < 0) throw unreadable(`unterminated single quote at character ${i + 1}`)
      word += line.slice(i + 1, end)
      inWord = true
      i = end + 1
    } else if (c === '"') {
      const start = i
      i++
      for (;;) {
        if (i >= line.length) throw unreadable(`unterminated double quote at character ${start + 1}`)
        const d = line[i]
        if (d === '"') break
        if (d === '\\' && i + 1 < line.length && '$`"\\\n'.includes(line[i + 1])) {
          if (line[i + 1] !== '\n') word += line[i + 1]
          i += 2
        } else {
          word += d
          i++
        }
      }
      inWord = true
      i++
    } else if (c === '\\') {
      if (i + 1 >= line.length) throw unreadable('ends with an unescaped backslash')
      if (line[i + 1] !== '\n') {
        word += line[i + 1]
        inWord = true
      }
      i += 2
    } else {
      word += c
      inWord = true
      i++
    }
  }
  if (inWord) words.push(word)
  return words
}

/**
 * The canonical `args` for a command: a shell string when only CMD is set (quoted so that
 * `splitShellWords` gives the words back), the JSON form when an ENTRYPOINT is set, `""` when empty.
 */
export function formatArgs(command: { cmd: string[]; entrypoint: string[] }): string {
  if (command.entrypoint.length > 0) return JSON.stringify({ entrypoint: command.entrypoint, cmd: command.cmd })
  return command.cmd.map(quoteWord).join(' ')
}

function quoteWord(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word
  return `'${word.replace(/'/g, `'\\''`)}'`
}

function sameList(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i])
}
