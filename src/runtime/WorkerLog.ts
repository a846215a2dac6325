import { EventEmitter } from 'node:events'
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs'
import { dirname } from 'node:path'

/** One line of worker output. `source` is `container` for its own output, `system` for Hangar's notes. */
export interface LogLine {
  seq: number
  /** Epoch ms. */
  ts: number
  source: 'container' | 'system'
  line: string
}

/**
 * A worker's output: the last `capacity` lines in memory (for the logs API) and every line appended to
 * a file. Listeners get lines live until the worker ends.
 */
export class WorkerLog {
  private readonly lines: LogLine[] = []
  private readonly emitter = new EventEmitter()
  private seq = 0
  private endedFlag = false

  constructor(
    private readonly file: string | null,
    private readonly capacity = 5_000,
  ) {
    this.emitter.setMaxListeners(0)
    if (file) mkdirSync(dirname(file), { recursive: true })
  }

  /** A finished log read back from its file (a worker of an earlier run, or long gone). */
  static fromFile(file: string): WorkerLog {
    const log = new WorkerLog(null)
    log.load(file)
    log.end()
    return log
  }

  /**
   * The log of a workload adopted after a restart: what its file holds, then new lines appended to it.
   * `containerBytes` is how much of the workload's own output the file already holds.
   */
  static resume(file: string): { log: WorkerLog; containerBytes: number; lastContainerTs: number } {
    const log = new WorkerLog(file)
    const containerBytes = log.load(file)
    const last = log.lines.filter((l) => l.source === 'container').pop()
    return { log, containerBytes, lastContainerTs: last?.ts ?? 0 }
  }

  /** Reads the lines of `file` into memory; returns the bytes of `container` output they stand for. */
  private load(file: string): number {
    let text = ''
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      // no file: an empty log
    }
    let containerBytes = 0
    for (const raw of text.split('\n')) {
      const m = /^(\S+) (container|system) (.*)$/.exec(raw)
      if (!m) continue
      this.lines.push({ seq: ++this.seq, ts: Date.parse(m[1]), source: m[2] as LogLine['source'], line: m[3] })
      if (this.lines.length > this.capacity) this.lines.shift()
      if (m[2] === 'container') containerBytes += Buffer.byteLength(m[3]) + 1
    }
    return containerBytes
  }

  get ended(): boolean {
    return this.endedFlag
  }

  /** Adds a line; `ts` (epoch ms) when the runtime says when it was written, else now. */
  append(source: LogLine['source'], line: string, ts = Date.now()): void {
    const entry: LogLine = { seq: ++this.seq, ts, source, line }
    this.lines.push(entry)
    if (this.lines.length > this.capacity) this.lines.splice(0, this.lines.length - this.capacity)
    if (this.file) {
      try {
        appendFileSync(this.file, `${new Date(entry.ts).toISOString()} ${source} ${line}\n`)
      } catch {
        // A full or removed disk must not take the worker down; the in-memory tail remains.
      }
    }
    this.emitter.emit('line', entry)
  }

  /** Lines kept in memory, oldest first. */
  history(): LogLine[] {
    return [...this.lines]
  }

  /** Calls `listener` for each new line; returns the unsubscribe function. */
  onLine(listener: (line: LogLine) => void): () => void {
    this.emitter.on('line', listener)
    return () => this.emitter.off('line', listener)
  }

  /** Calls `listener` once the worker has ended (at once if it has). */
  onEnd(listener: () => void): () => void {
    if (this.endedFlag) {
      listener()
      return () => {}
    }
    this.emitter.once('end', listener)
    return () => this.emitter.off('end', listener)
  }

  end(): void {
    if (this.endedFlag) return
    this.endedFlag = true
    this.emitter.emit('end')
  }
}

/** Splits a byte stream into lines, keeping a partial last line until it is completed or the stream ends. */
export function lineSplitter(onLine: (line: string) => void): { push(chunk: Buffer | string): void; flush(): void } {
  let rest = ''
  return {
    push(chunk) {
      rest += chunk.toString()
      let nl: number
      while ((nl = rest.indexOf('\n')) >= 0) {
        onLine(rest.slice(0, nl).replace(/\r$/, ''))
        rest = rest.slice(nl + 1)
      }
      // A runaway line without newline is cut rather than held forever.
      if (rest.length > 64 * 1024) {
        onLine(rest)
        rest = ''
      }
    },
    flush() {
      if (rest) onLine(rest)
      rest = ''
    },
  }
}
