import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { until } from '../../test/helpers/until.js'
import { trackConnections } from './drain.js'

describe('trackConnections', () => {
  let server: Server
  afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())))

  /** A server whose responses stream until the client leaves (a log follower), tracked. */
  async function streaming() {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write(': hello\n\n')
    })
    const connections = trackConnections(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const open = async (request: boolean): Promise<Socket> => {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1')
      await new Promise((resolve) => socket.once('connect', resolve))
      if (request) {
        socket.write('GET /logs HTTP/1.1\r\nHost: x\r\n\r\n')
        await new Promise((resolve) => socket.once('data', resolve))
      }
      return socket
    }
    return { connections, open }
  }

  it('forgets a connection that closes while its response streams (a follower that leaves)', async () => {
    const { connections, open } = await streaming()
    const followers = await Promise.all([1, 2, 3].map(() => open(true)))
    expect(connections.tracked()).toBe(3)
    for (const socket of followers) socket.destroy()
    await until(async () => connections.tracked() === 0, 2_000, 'closed connections forgotten').catch(() => {})
    expect(connections.tracked(), 'connections kept after they closed').toBe(0)
  })

  it('closes connections serving no request, and only those', async () => {
    const { connections, open } = await streaming()
    const idle = await open(false)
    const busy = await open(true)
    await until(async () => connections.tracked() === 2, 2_000, 'both connections tracked')
    connections.closeUnused()
    await new Promise((resolve) => idle.once('close', resolve))
    expect(busy.destroyed).toBe(false)
    busy.destroy()
    await until(async () => connections.tracked() === 0, 2_000, 'closed connections forgotten')
  })
})
