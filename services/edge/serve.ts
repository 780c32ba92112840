import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import type { Hono } from 'hono'
import type { EdgeEnv } from './env.ts'

export interface HttpServer {
  port: number
  /** Stop accepting connections, let requests in flight finish, then resolve. */
  close(): Promise<void>
}

export async function listen(app: Hono<EdgeEnv>, host: string, port: number): Promise<HttpServer> {
  const server = createAdaptorServer({ fetch: app.fetch }) as Server
  // Slow clients must not pin sockets forever; uploads are small (256 KB).
  server.requestTimeout = 30_000
  server.headersTimeout = 15_000
  server.keepAliveTimeout = 5_000
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolveListen())
  })
  const actualPort = (server.address() as AddressInfo).port
  return {
    port: actualPort,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose())
        server.closeIdleConnections()
      }),
  }
}
