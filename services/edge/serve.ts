import { readFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { createSecureServer, type Http2SecureServer, type ServerHttp2Session } from 'node:http2'
import type { AddressInfo } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { getRequestListener } from '@hono/node-server'
import type { Hono } from 'hono'
import type { DirectDispatch } from './direct-dispatch.ts'
import type { EdgeEnv } from './env.ts'

/** PEM files of the edge's certificate (chain) and private key. */
export interface TlsFiles {
  certPath: string
  keyPath: string
}

export interface HttpServer {
  port: number
  scheme: 'http' | 'https'
  /** Re-read the certificate and key (SIGHUP): new connections get them, open ones keep theirs. */
  reloadTls(): Promise<void>
  /** Stop accepting connections, let requests in flight finish, then resolve. */
  close(): Promise<void>
}

/**
 * Serve the edge: HTTPS with HTTP/2 offered by ALPN (HTTP/1.1 still answered) when given a
 * certificate, plain HTTP otherwise (which the edge answers only to loopback clients and trusted
 * proxies: middleware/require-https.ts).
 */
export async function listen(
  app: Hono<EdgeEnv>,
  host: string,
  port: number,
  options: { tls?: TlsFiles; direct?: DirectDispatch | undefined } = {},
): Promise<HttpServer> {
  const tls = options.tls
  const hono = getRequestListener(app.fetch)
  const direct = options.direct
  // Not an async function: a direct route's request would otherwise cost a promise of its own.
  const listener: (...args: Parameters<typeof hono>) => unknown = direct
    ? (req, res) => (direct(req, res) ? undefined : hono(req, res))
    : hono
  const server = tls
    ? createSecureServer({ allowHTTP1: true, ...(await readTls(tls)) }, listener)
    : createServer(listener)
  // HTTP/2 sessions and TLS sockets, so close() can end the idle ones instead of waiting for them.
  const sessions = new Set<ServerHttp2Session>()
  const sockets = new Set<TLSSocket>()
  if (tls) {
    const secure = server as Http2SecureServer
    // HTTP/2 sessions have no per-request timers: idle or stalled connections close after 30 s.
    secure.setTimeout(30_000)
    secure.on('session', (session: ServerHttp2Session) => {
      sessions.add(session)
      session.once('close', () => sessions.delete(session))
    })
    secure.on('secureConnection', (socket: TLSSocket) => {
      sockets.add(socket)
      socket.once('close', () => sockets.delete(socket))
    })
  } else {
    const http = server as Server
    // Slow clients must not pin sockets forever; uploads are small (256 KB).
    http.requestTimeout = 30_000
    http.headersTimeout = 15_000
    http.keepAliveTimeout = 5_000
  }
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolveListen())
  })
  const actualPort = (server.address() as AddressInfo).port
  return {
    port: actualPort,
    scheme: tls ? 'https' : 'http',
    async reloadTls() {
      if (!tls) return
      ;(server as Http2SecureServer).setSecureContext(await readTls(tls))
    },
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose())
        if ('closeIdleConnections' in server) server.closeIdleConnections()
        // HTTP/2: close() lets a session's open streams finish, then ends it. HTTP/1.1 over TLS
        // has no idle tracking here: any connection still open after the grace period is ended.
        for (const session of sessions) session.close()
        if (sockets.size > 0)
          setTimeout(() => {
            for (const socket of sockets) socket.destroy()
          }, CLOSE_GRACE_MS).unref()
      }),
  }
}

const CLOSE_GRACE_MS = 5_000

async function readTls(tls: TlsFiles): Promise<{ cert: Buffer; key: Buffer }> {
  const [cert, key] = await Promise.all([readFile(tls.certPath), readFile(tls.keyPath)])
  return { cert, key }
}
