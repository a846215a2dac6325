import { closeSync, fstatSync, openSync, readSync, watch, type FSWatcher } from 'node:fs'
import { lineSplitter } from '../WorkerLog.js'

/**
 * Follows a file a process writes its output to, line by line. The process holds the file itself (not a pipe
 * to the control plane), so it keeps running and writing while no control plane reads: a restarted one
 * resumes from where the log says it stopped.
 */
export class OutputTail {
  private readonly fd: number
  private readonly split
  private readonly watcher: FSWatcher | null
  private readonly timer: NodeJS.Timeout
  private closed = false

  constructor(
    file: string,
    private offset: number,
    onLine: (line: string) => void,
  ) {
    this.fd = openSync(file, 'r')
    this.split = lineSplitter(onLine)
    let watcher: FSWatcher | null = null
    try {
      watcher = watch(file, () => this.read())
      watcher.on('error', () => undefined)
    } catch {
      // No inotify: the timer below still reads.
    }
    this.watcher = watcher
    // Also poll: file events can be coalesced or missed (and are absent on some file systems).
    this.timer = setInterval(() => this.read(), 1_000).unref()
    this.read()
  }

  /** Reads what was appended since the last read. */
  read(): void {
    if (this.closed) return
    const buf = Buffer.alloc(64 * 1024)
    for (;;) {
      let n: number
      try {
        if (fstatSync(this.fd).size <= this.offset) return
        n = readSync(this.fd, buf, 0, buf.length, this.offset)
      } catch {
        // A read that fails (an I/O error) ends this round only: the next event or tick reads from the same offset.
        return
      }
      if (n <= 0) return
      this.offset += n
      this.split.push(buf.subarray(0, n))
    }
  }

  /** Reads the rest, emits a last partial line, and stops following. */
  close(): void {
    if (this.closed) return
    this.read()
    this.split.flush()
    this.closed = true
    this.watcher?.close()
    clearInterval(this.timer)
    closeSync(this.fd)
  }
}
