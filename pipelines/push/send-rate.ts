import type { RetryClock } from '../failures/retry.ts'

/**
 * The per-app send rate (SLUICE_PUSH_SEND_RATE_PER_APP): deliveries per second handed to the
 * transports for one app, with bursts of up to one second's worth. Each call reserves its slot
 * before waiting, so concurrent callers of one app queue up in order. 0 means no limit.
 *
 * Exact per sender process; the push-deliveries topic is keyed by app, so one sender owns an
 * app's deliveries and the rate holds for the whole deployment.
 */
export class SendRate {
  private readonly next = new Map<string, number>()
  private sweptAt = 0

  constructor(
    readonly perSecond: number,
    private readonly clock: Pick<RetryClock, 'now' | 'sleep'>,
  ) {}

  /** Resolves when `count` deliveries of `app` may go. */
  async acquire(app: string, count: number): Promise<void> {
    if (this.perSecond <= 0 || count <= 0) return
    const now = this.clock.now()
    this.sweep(now)
    // `next`: when the app's deliveries so far have used up their time at the rate. A call may go
    // once it ends at most one second past now (a token bucket holding one second's worth).
    const next = Math.max(this.next.get(app) ?? now, now)
    const cost = (count * 1000) / this.perSecond
    this.next.set(app, next + cost)
    const wait = next + cost - now - BURST_MS
    if (wait > 0) await this.clock.sleep(wait)
  }

  /** Apps whose deliveries have used up their time carry no state: dropping them bounds the map. */
  private sweep(now: number): void {
    if (now - this.sweptAt < 10_000) return
    this.sweptAt = now
    for (const [app, at] of this.next) if (at < now) this.next.delete(app)
  }
}

const BURST_MS = 1000
