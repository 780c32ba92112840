import type { Context, MiddlewareHandler } from 'hono'
import { tooManyRequests } from '../../shared/errors.ts'
import type { EdgeEnv } from '../env.ts'

/**
 * Token buckets per key: `rate` requests per `perMs`, bursts up to `rate`. Limits are per edge
 * process (each edge enforces the full rate; put a shared limiter in front to make them global).
 */
export class TokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>()
  private readonly rate: number
  private readonly perMs: number
  private sweptAt = Date.now()

  constructor(rate: number, perMs: number) {
    this.rate = rate
    this.perMs = perMs
  }

  /** Takes one token; returns 0 when allowed, else the seconds until a token is available. */
  take(key: string, now = Date.now()): number {
    this.sweep(now)
    const bucket = this.buckets.get(key) ?? { tokens: this.rate, at: now }
    const refill = ((now - bucket.at) / this.perMs) * this.rate
    bucket.tokens = Math.min(this.rate, bucket.tokens + refill)
    bucket.at = now
    this.buckets.set(key, bucket)
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return 0
    }
    return ((1 - bucket.tokens) / this.rate) * (this.perMs / 1000)
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
