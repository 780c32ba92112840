import type { Context, MiddlewareHandler } from 'hono'
import type { Clock } from '../../../pipelines/clock.ts'
import { tooManyRequests } from '../../shared/errors.ts'
import { addressLimitKey, clientAddress, trustedProxyList } from '../client-address.ts'
import type { AuthAttempts, EdgeEnv } from '../env.ts'
import { TokenBuckets } from './rate-limit.ts'

export interface AuthFailureLimitOptions {
  /** Failed authentications an address may make per minute (a burst of as many, then refilled). */
  perAddressPerMinute: number
  /** Proxies whose X-Forwarded-For names the client; none: the socket's peer is the client. */
  trustedProxies: readonly string[]
  clock?: Pick<Clock, 'now'>
}

/**
 * Puts the per-address limit on failed authentications on the context, for the auth middleware
 * to consult before it checks any credential (apiAuth, adminAuth). Only failures count, so a busy
 * client with good credentials is never limited; an address over the limit gets 429 for every
 * authenticated request, good credentials included, since answering those would let a guesser
 * keep testing guesses.
 */
export function authFailureLimit(limit: AuthFailureLimit): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    c.set(
      'authAttempts',
      limit.attempts(peerAddress(c), () => c.req.header('X-Forwarded-For')),
    )
    await next()
  }
}

/**
 * The limit's state: failures per address, shared by every route that authenticates, those
 * behind the middleware and those served before Hono's dispatch (direct-dispatch.ts).
 */
export class AuthFailureLimit {
  private readonly failures: TokenBuckets
  private readonly trusted: ReturnType<typeof trustedProxyList> | undefined

  constructor(options: AuthFailureLimitOptions) {
    this.failures = new TokenBuckets(options.perAddressPerMinute, 60_000, options.clock)
    this.trusted = options.trustedProxies.length > 0 ? trustedProxyList(options.trustedProxies) : undefined
  }

  /** The limit bound to one request's client (its socket's peer, or what a trusted proxy says). */
  attempts(peer: string | undefined, forwardedFor: () => string | undefined): AuthAttempts {
    return new ClientAttempts(this.failures, this.trusted, peer, forwardedFor)
  }
}

/**
 * One request's view of the limit. A class, not an object of closures: the edge makes one per
 * upload, and the client's address is worked out only when a failure is on record somewhere.
 */
class ClientAttempts implements AuthAttempts {
  private key: string | undefined

  constructor(
    private readonly failures: TokenBuckets,
    private readonly trusted: ReturnType<typeof trustedProxyList> | undefined,
    private readonly peer: string | undefined,
    private readonly forwardedFor: () => string | undefined,
  ) {}

  check(): void {
    // No failure on record anywhere: nothing to look up (the address is parsed only when needed).
    if (this.failures.empty) return
    const wait = this.failures.wait(this.keyOf())
    if (wait > 0) throw tooManyRequests(wait, 'too many failed authentication attempts; retry later')
  }

  failed(): void {
    this.failures.take(this.keyOf())
  }

  private keyOf(): string {
    return (this.key ??= addressLimitKey(clientAddress(this.peer, this.forwardedFor(), this.trusted)))
  }
}

/** The limit for this request, if the edge runs one (admin routes are a router of their own env). */
export function authAttemptsOf(c: Context): AuthAttempts | undefined {
  return (c as Context<EdgeEnv>).get('authAttempts')
}

/** The socket's peer under @hono/node-server; absent in `app.request()` without an env. */
function peerAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: { socket?: { remoteAddress?: string } } } | undefined
  return env?.incoming?.socket?.remoteAddress
}
