import { systemClock, type Clock } from '../../../pipelines/clock.ts'
import { tooManyRequests } from '../../shared/errors.ts'
import { TokenBuckets } from '../middleware/rate-limit.ts'

export interface QueryKeyLimitOptions {
  /** Queries of one key running at once. */
  concurrent: number
  perMinute: number
  perHour: number
  perDay: number
}

/**
 * The Query and Apps APIs' limits per API key (the original's: 1 at a time, 60 a minute, 150 an
 * hour, 1,000 a day), per edge process like every rate limit here. A request over any of them is
 * 429 with Retry-After; one refused by a window takes nothing from the others.
 */
export class QueryKeyLimits {
  private readonly running = new Map<string, number>()
  private readonly windows: { buckets: TokenBuckets; label: string; rate: number }[]

  constructor(
    private readonly options: QueryKeyLimitOptions,
    clock: Pick<Clock, 'now'> = systemClock,
  ) {
    this.windows = [
      {
        buckets: new TokenBuckets(options.perMinute, 60_000, clock),
        label: 'minute',
        rate: options.perMinute,
      },
      { buckets: new TokenBuckets(options.perHour, 3_600_000, clock), label: 'hour', rate: options.perHour },
      { buckets: new TokenBuckets(options.perDay, 86_400_000, clock), label: 'day', rate: options.perDay },
    ]
  }

  /** Takes a turn for `key`, or throws 429; call the returned function when the request is done. */
  acquire(key: string): () => void {
    const running = this.running.get(key) ?? 0
    if (running >= this.options.concurrent)
      throw tooManyRequests(
        1,
        `this API key already has ${running} quer${running === 1 ? 'y' : 'ies'} running (at most ${this.options.concurrent} at a time); retry when it is done`,
      )
    for (const w of this.windows) {
      const wait = w.buckets.wait(key)
      if (wait > 0)
        throw tooManyRequests(
          wait,
          `rate limit of ${w.rate} queries per ${w.label} for this API key exceeded; retry later`,
        )
    }
    for (const w of this.windows) w.buckets.take(key)
    this.running.set(key, running + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const now = (this.running.get(key) ?? 1) - 1
      if (now <= 0) this.running.delete(key)
      else this.running.set(key, now)
    }
  }
}
