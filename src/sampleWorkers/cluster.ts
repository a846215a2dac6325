/**
 * Sample cluster program `hangar/cluster:latest`: rank 0 listens on NODE_ADDR:PRIMARY_PORT; every other
 * rank connects to PRIMARY_ADDR:PRIMARY_PORT (retrying while the primary starts), says hello with its rank
 * and address, and prints the primary's answer. It uses only the environment Hangar gives it.
 */
import { connect, createServer } from 'node:net'

const rank = Number(process.env.NODE_RANK)
const nodeAddr = process.env.NODE_ADDR!
const primary = { host: process.env.PRIMARY_ADDR!, port: Number(process.env.PRIMARY_PORT) }
console.log(
  `rank ${rank} of ${process.env.NUM_NODES} at ${nodeAddr}; primary ${primary.host}:${primary.port}; WORLD_SIZE=${process.env.WORLD_SIZE}`,
)

if (rank === 0) {
  const server = createServer((socket) => {
    socket.setEncoding('utf8')
    socket.once('data', (line: string) => {
      console.log(`rank 0 got: ${line.trim()} (from ${socket.remoteAddress})`)
      socket.end(`welcome, ${line.trim().replace(/^hello from /, '')}\n`)
    })
  })
  server.listen(primary.port, nodeAddr, () => console.log(`rank 0 listening on ${nodeAddr}:${primary.port}`))
} else {
  const attempt = (n: number) => {
    // Connect from this node's own address, so the primary sees who is calling.
    const socket = connect({ host: primary.host, port: primary.port, localAddress: nodeAddr })
    socket.setEncoding('utf8')
    socket.once('connect', () => socket.write(`hello from rank ${rank} at ${nodeAddr}\n`))
    socket.once('data', (line: string) => console.log(`rank ${rank} got: ${line.trim()}`))
    socket.once('error', (err) => {
      if (n > 100) throw err
      setTimeout(() => attempt(n + 1), 100)
    })
  }
  attempt(0)
}
// Stays up (a cluster member is a long-running machine) until stopped.
setInterval(() => {}, 60_000)
process.on('SIGTERM', () => process.exit(0))
