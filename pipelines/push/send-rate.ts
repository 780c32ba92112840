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
    const start = Math.max(this.next.get(app) ?? now - BURST_MS, now - BURST_MS)
    this.next.set(app, start + (count * 1000) / this.perSecond)
    const wait = start - now
    if (wait > 0) await this.clock.sleep(wait)
  }

  /** Apps idle for a second carry no state: dropping them bounds the map to the busy apps. */
  private sweep(now: number): void {
    if (now - this.sweptAt < 10_000) return
    this.sweptAt = now
    for (const [app, at] of this.next) if (at < now - BURST_MS) this.next.delete(app)
  }
}

const BURST_MS = 1000
