import type { BodyInstance } from '../generate.ts'
import { counterRate } from '../stats.ts'
import type { BenchContext } from './context.ts'
import { endToEnd, gzipSource, type EndToEndResult } from './uploads.ts'

export interface SustainedResult extends EndToEndResult {
  /** Events made queryable per second over the first and the last minute of the scenario. */
  firstMinuteEventsPerSecond: number
  lastMinuteEventsPerSecond: number
  /** Highest RSS of the Sluice process during the scenario, MB. */
  rssMaxMb: number | undefined
}

/**
 * The sustained run (full run only): ~10,000,000 events in gzip bodies sent as the end-to-end
 * scenarios send them (closed loop, at most `window` events accepted and not yet queryable),
 * until the supply is used up, then drained. The dedupe index and the tables grow by 10M rows; the
 * rate over the last minute against the first minute says whether Sluice slows down as they grow.
 */
export async function sustained(
  ctx: BenchContext,
  options: { app: string; bodies: readonly BodyInstance[]; concurrency: number; window: number },
): Promise<SustainedResult> {
  const from = (performance.now() - ctx.t0) / 1000
  const r = await endToEnd(ctx, {
    name: 'sustained',
    app: options.app,
    source: gzipSource(options.bodies),
    // Until the supply is used up (an hour at most).
    durationMs: 3_600_000,
    concurrency: options.concurrency,
    window: options.window,
  })
  const samples = r.timeline.queryable
  const end = r.queryableAfterS
  return {
    ...r,
    firstMinuteEventsPerSecond: counterRate(samples, 0, Math.min(60, end)),
    lastMinuteEventsPerSecond: counterRate(samples, Math.max(0, end - 60), end),
    rssMaxMb: ctx.rss.maxBetween(from, (performance.now() - ctx.t0) / 1000),
  }
}
