import type { Context, MiddlewareHandler } from 'hono'
import { systemClock, type Clock } from '../../../pipelines/clock.ts'
import { tooManyRequests } from '../../shared/errors.ts'
import type { EdgeEnv } from '../env.ts'

/** A refill summed from many small steps may miss 1 by a rounding error; the token is still due. */
const WHOLE_TOKEN = 1 - 1e-9

/**
 * Token buckets per key: `rate` requests per `perMs`, bursts up to `rate`. Limits are per edge
 * process (each edge enforces the full rate; put a shared limiter in front to make them global).
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>()
  private readonly rate: number
  private readonly perMs: number
  private readonly clock: Pick<Clock, 'now'>
  private sweptAt: number

  constructor(rate: number, perMs: number, clock: Pick<Clock, 'now'> = systemClock) {
    this.rate = rate
    this.perMs = perMs
    this.clock = clock
    this.sweptAt = clock.now()
  }

  /** Takes one token; returns 0 when allowed, else the seconds until a token is available. */
  take(key: string, now = this.clock.now()): number {
    this.sweep(now)
    const bucket = this.refilled(key, now)
    this.buckets.set(key, bucket)
    if (bucket.tokens >= WHOLE_TOKEN) {
      bucket.tokens = Math.max(0, bucket.tokens - 1)
      return 0
    }
    return this.secondsUntilToken(bucket.tokens)
  }

  /** No key has taken a token since its bucket was last full: every wait() answers 0. */
  get empty(): boolean {
    return this.buckets.size === 0
  }

  /** Like take, without taking: 0 when a token is there, else the seconds until one is. */
  wait(key: string, now = this.clock.now()): number {
    const bucket = this.buckets.get(key)
    if (!bucket) return 0
    const { tokens } = this.refilled(key, now)
    return tokens >= WHOLE_TOKEN ? 0 : this.secondsUntilToken(tokens)
  }

  private refilled(key: string, now: number): { tokens: number; at: number } {
    const bucket = this.buckets.get(key) ?? { tokens: this.rate, at: now }
    // A wall clock may step back (NTP): that refills nothing rather than taking tokens away.
    const elapsed = Math.max(0, now - bucket.at)
    bucket.tokens = Math.min(this.rate, bucket.tokens + (elapsed / this.perMs) * this.rate)
    bucket.at = Math.max(bucket.at, now)
    return bucket
  }

  private secondsUntilToken(tokens: number): number {
    return ((1 - tokens) / this.rate) * (this.perMs / 1000)
  }

  /** Full buckets carry no information; dropping them bounds memory to the active keys. */
  private sweep(now: number): void {
    if (now - this.sweptAt < this.perMs * 2) return
    this.sweptAt = now
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) / this.perMs) * this.rate >= this.rate) this.buckets.delete(key)
    }
  }
}

export function rateLimit(
  buckets: TokenBuckets,
  keyOf: (c: Context<EdgeEnv>) => string,
  message = 'rate limit exceeded',
): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const wait = buckets.take(keyOf(c))
    if (wait > 0) throw tooManyRequests(wait, message)
    await next()
  }
}
