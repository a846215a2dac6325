import { describe, expect, it } from 'vitest'
import { formatArgs, parseArgs, resolveCommand, splitShellWords } from './containerCommand.js'
import { DomainError } from '../errors.js'

function failure(fn: () => unknown): { status: string; errors: string[] | undefined } {
  try {
    fn()
  } catch (err) {
    if (err instanceof DomainError) return { status: err.kind, errors: err.errors }
    throw err
  }
  throw new Error('expected a DomainError')
}

describe('splitShellWords', () => {
  it.each([
    ['python handler.py', ['python', 'handler.py']],
    ['  python   -u\thandler.py \n', ['python', '-u', 'handler.py']],
    [`echo 'a b' "c d"`, ['echo', 'a b', 'c d']],
    [`echo 'it'\\''s'`, ['echo', "it's"]],
    [`echo "say \\"hi\\"" "\\$HOME" "a\\b"`, ['echo', 'say "hi"', '$HOME', 'a\\b']],
    ['echo a\\ b \\"q\\"', ['echo', 'a b', '"q"']],
    [`echo '' ""`, ['echo', '', '']],
    [`pre"mid"'post'`, ['premidpost']],
    [
      'echo $HOME ~ *.py && ls; # not a comment',
      ['echo', '$HOME', '~', '*.py', '&&', 'ls;', '#', 'not', 'a', 'comment'],
    ],
    ['line\\\ncontinued', ['linecontinued']],
    [`'single "keeps" \\ literal'`, ['single "keeps" \\ literal']],
  ])('splits %j', (line, words) => {
    expect(splitShellWords(line)).toEqual(words)
  })

  it.each([
    [`echo 'open`, 'args: unterminated single quote at character 6'],
    [`echo "open`, 'args: unterminated double quote at character 6'],
    ['echo \\', 'args: ends with an unescaped backslash'],
  ])('rejects %j with 422', (line, error) => {
    expect(failure(() => splitShellWords(line))).toEqual({ status: 'unprocessable', errors: [error] })
  })
})

describe('parseArgs', () => {
  it('treats a bare shell string as CMD', () => {
    expect(parseArgs('python -u handler.py')).toEqual({ cmd: ['python', '-u', 'handler.py'], entrypoint: [] })
  })

  it('reads a JSON object string with either or both keys', () => {
    expect(parseArgs('{"entrypoint": ["python"], "cmd": ["a.py"]}')).toEqual({ cmd: ['a.py'], entrypoint: ['python'] })
    expect(parseArgs(' {"cmd": ["a.py"]} ')).toEqual({ cmd: ['a.py'], entrypoint: [] })
    expect(parseArgs('{"entrypoint": ["python"]}')).toEqual({ cmd: [], entrypoint: ['python'] })
  })

  it('reads "" and blanks as no command', () => {
    expect(parseArgs('')).toEqual({ cmd: [], entrypoint: [] })
    expect(parseArgs('   ')).toEqual({ cmd: [], entrypoint: [] })
  })

  it('rejects unreadable JSON forms with 422 naming the problem', () => {
    expect(failure(() => parseArgs('{"cmd": ["a",]}')).errors?.[0]).toMatch(
      /^args: starts with "\{" but is not valid JSON/,
    )
    expect(failure(() => parseArgs('{"cmd": "a", "user": ["x"]}'))).toEqual({
      status: 'unprocessable',
      errors: [
        'args: cmd must be an array of strings',
        'args: unknown key "user"; only "entrypoint" and "cmd" are allowed',
      ],
    })
    expect(failure(() => parseArgs('{"cmd": [1]}')).errors).toEqual(['args: cmd must be an array of strings'])
    expect(failure(() => parseArgs('["python", "a.py"]')).errors).toEqual([
      'args: a JSON array is not accepted; send it as cmd, or as {"cmd": [...]}',
    ])
  })
})

describe('formatArgs', () => {
  it.each([
    [{ cmd: ['python', '-u', 'handler.py'], entrypoint: [] }, 'python -u handler.py'],
    [{ cmd: ['echo', 'a b', "it's", '', '$HOME', '{x}'], entrypoint: [] }, `echo 'a b' 'it'\\''s' '' '$HOME' '{x}'`],
    [{ cmd: ['a.py'], entrypoint: ['python'] }, '{"entrypoint":["python"],"cmd":["a.py"]}'],
    [{ cmd: [], entrypoint: [] }, ''],
  ])('formats %j so that parsing gives it back', (command, args) => {
    expect(formatArgs(command)).toBe(args)
    expect(parseArgs(args)).toEqual(command)
  })
})

describe('resolveCommand', () => {
  const current = { args: 'python a.py', cmd: ['python', 'a.py'], entrypoint: [] }

  it('keeps the current command when nothing is given', () => {
    expect(resolveCommand({}, current)).toEqual(current)
    expect(resolveCommand({})).toEqual({ args: '', cmd: [], entrypoint: [] })
  })

  it('stores args as given and deconstructs it', () => {
    expect(resolveCommand({ args: `python  'my file.py'` }, current)).toEqual({
      args: `python  'my file.py'`,
      cmd: ['python', 'my file.py'],
      entrypoint: [],
    })
  })

  it('clears everything with args ""', () => {
    expect(resolveCommand({ args: '' }, { args: '{"entrypoint":["sh"]}', cmd: [], entrypoint: ['sh'] })).toEqual({
      args: '',
      cmd: [],
      entrypoint: [],
    })
  })

  it('replaces only the given array and rewrites args to match', () => {
    expect(resolveCommand({ entrypoint: ['/bin/sh', '-c'] }, current)).toEqual({
      args: '{"entrypoint":["/bin/sh","-c"],"cmd":["python","a.py"]}',
      cmd: ['python', 'a.py'],
      entrypoint: ['/bin/sh', '-c'],
    })
    expect(resolveCommand({ cmd: ['python', 'b c.py'] }, current)).toEqual({
      args: `python 'b c.py'`,
      cmd: ['python', 'b c.py'],
      entrypoint: [],
    })
    expect(resolveCommand({ cmd: [] }, current)).toEqual({ args: '', cmd: [], entrypoint: [] })
  })

  it('accepts args with arrays that describe the same command', () => {
    expect(resolveCommand({ args: 'python a.py', cmd: ['python', 'a.py'], entrypoint: [] })).toEqual(current)
    const json = '{"entrypoint":["python"],"cmd":["a.py"]}'
    expect(resolveCommand({ args: json, entrypoint: ['python'], cmd: ['a.py'] })).toEqual({
      args: json,
      cmd: ['a.py'],
      entrypoint: ['python'],
    })
  })

  it('rejects args that disagree with cmd or entrypoint with 400 naming each field', () => {
    expect(failure(() => resolveCommand({ args: 'python a.py', cmd: ['python', 'b.py'] }))).toEqual({
      status: 'bad_request',
      errors: ['cmd: ["python","b.py"] disagrees with args, which describes cmd ["python","a.py"]'],
    })
    // A bare shell string is CMD only, so an ENTRYPOINT beside it is a different command.
    expect(failure(() => resolveCommand({ args: 'python a.py', entrypoint: ['python'], cmd: ['a.py'] }))).toEqual({
      status: 'bad_request',
      errors: [
        'entrypoint: ["python"] disagrees with args, which describes entrypoint []',
        'cmd: ["a.py"] disagrees with args, which describes cmd ["python","a.py"]',
      ],
    })
    expect(failure(() => resolveCommand({ args: '', cmd: ['x'] })).status).toBe('bad_request')
  })

  it('does not share arrays with its inputs', () => {
    const out = resolveCommand({}, current)
    out.cmd.push('mutated')
    expect(current.cmd).toEqual(['python', 'a.py'])
  })
})
