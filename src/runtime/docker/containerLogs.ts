import { PassThrough } from 'node:stream'
import type Docker from 'dockerode'
import { lineSplitter, type WorkerLog } from '../WorkerLog.js'

/**
 * Follows a container's stdout and stderr into `logs` from `sinceMs` on (epoch ms, exclusive), each line with
 * the engine's own timestamp so a restarted control plane resumes exactly where the log file ends. Resolves
 * when the engine ends the stream (the container stopped) or the connection breaks.
 */
export async function followContainerLogs(
  container: Docker.Container,
  logs: WorkerLog,
  sinceMs: number,
): Promise<void> {
  const stream = (await container.logs({
    follow: true,
    stdout: true,
    stderr: true,
    timestamps: true,
    since: Math.floor(sinceMs / 1000),
  })) as NodeJS.ReadableStream
  const out = new PassThrough()
  const err = new PassThrough()
  const onLine = (raw: string) => {
    // `<RFC 3339 nano> <line>`
    const space = raw.indexOf(' ')
    const ts = Date.parse(raw.slice(0, space))
    if (Number.isNaN(ts)) return logs.append('container', raw)
    if (ts <= sinceMs) return
    logs.append('container', raw.slice(space + 1), ts)
  }
  for (const s of [out, err]) {
    const split = lineSplitter(onLine)
    s.on('data', (chunk: Buffer) => split.push(chunk))
    s.on('end', () => split.flush())
  }
  container.modem.demuxStream(stream, out, err)
  await new Promise<void>((resolve) => {
    const done = () => {
      out.end()
      err.end()
      resolve()
    }
    stream.once('end', done)
    stream.once('close', done)
    stream.once('error', done)
  })
}
