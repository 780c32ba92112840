import type { Context, MiddlewareHandler } from 'hono'
import { SluiceError } from '../../shared/errors.ts'
import { isTrusted, normaliseAddress, trustedProxyList } from '../client-address.ts'
import type { EdgeEnv } from '../env.ts'

export interface RequireHttpsOptions {
  /** Proxies trusted to say, in X-Forwarded-Proto, that the client used HTTPS. */
  trustedProxies: readonly string[]
  /** Answer plain HTTP from any address (SLUICE_ALLOW_PLAIN_HTTP): private networks and tests only. */
  allowPlainHttp: boolean
}

/** Paths an orchestrator or a scraper reaches over plain HTTP inside a private network. */
const OPERATIONAL = new Set(['/healthz', '/readyz', '/metrics'])

/**
 * The spec allows no plain HTTP: API keys and secrets travel in every request. A request that did
 * not arrive over TLS is answered only when it comes from this machine (a laptop, a sidecar), or
 * from a trusted proxy that says its client used HTTPS; anything else gets a 403 that says what to
 * do, before credentials are even read.
 */
export function requireHttps(options: RequireHttpsOptions): MiddlewareHandler<EdgeEnv> {
  const check = httpsCheck(options)
  return async (c, next) => {
    check(c.req.path, socketOf(c), () => c.req.header('X-Forwarded-Proto'))
    return next()
  }
}

/** What the policy reads of a request's connection (a socket; absent in app.request()). */
export interface PeerSocket {
  encrypted?: boolean
  remoteAddress?: string
}

export type HttpsCheck = (
  path: string,
  socket: PeerSocket | undefined,
  forwardedProto: () => string | undefined,
) => void

/**
 * The policy itself, for the middleware and for routes served before Hono's dispatch
 * (direct-dispatch.ts): throws the 403 for a request that may not be answered.
 */
export function httpsCheck(options: RequireHttpsOptions): HttpsCheck {
  const trusted = options.trustedProxies.length > 0 ? trustedProxyList(options.trustedProxies) : undefined
  return (path, socket, forwardedProto) => {
    if (options.allowPlainHttp || OPERATIONAL.has(path) || socket?.encrypted === true) return
    const peer = socket?.remoteAddress
    // app.request() in tests has no socket at all: there is no network to protect.
    if (peer === undefined || isLoopback(peer)) return
    // The header counts only when the peer itself is a proxy we trust: anyone can write it.
    const proto = forwardedProto()?.split(',')[0]?.trim().toLowerCase()
    if (trusted && proto === 'https' && isTrusted(normaliseAddress(peer), trusted)) return
    throw new SluiceError(
      'https_required',
      403,
      'plain HTTP is refused: send requests over HTTPS (or through a trusted proxy that terminates TLS)',
    )
  }
}

function socketOf(c: Context): PeerSocket | undefined {
  const env = c.env as { incoming?: { socket?: PeerSocket } } | undefined
  return env?.incoming?.socket
}

function isLoopback(address: string): boolean {
  const bare = normaliseAddress(address)
  return bare === '::1' || bare.startsWith('127.')
}
