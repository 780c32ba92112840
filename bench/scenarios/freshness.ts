import type { BodyInstance } from '../generate.ts'
import { HttpClient, openLoop, sleep } from '../http.ts'
import type { CpuUse } from '../machine.ts'
import { perSecond, summarize, type LatencySummary } from '../stats.ts'
import { countStatus, measureCpu, sinceRun, type BenchContext, type StatusCounts } from './context.ts'
import type { BodySource } from './uploads.ts'

export interface FreshnessResult {
  name: 'freshness'
  app: string
  /** Share of the max sustained rate asked for (FRESHNESS_LOAD_SHARE). */
  loadShare?: number
  /** Bodies per second asked for: `loadShare` of the max sustained rate. */
  targetBodiesPerSecond: number
  targetEventsPerSecond: number
  sendMs: number
  sent: number
  skipped: number
  statuses: StatusCounts
  acceptedEventsPerSecond: number
  samples: number
  timedOut: number
  /** Receipt reads the sampling made, and how long each took to answer. */
  polls: number
  receiptReadMs: LatencySummary
  /** 202 to receipt `done` (every event queryable), per sampled upload. */
  freshnessMs: LatencySummary
  freshnessPoints: [number, number][]
  /**
   * The load's first seconds, at the same rate, before sampling counts (FRESHNESS_WARM_UP_MS): its
   * uploads' freshness, for information. From idle, the pipeline takes 1-2 s to settle.
   */
  warmUp?: { ms: number; freshnessMs: LatencySummary }
  cpu: CpuUse
}

/** Freshness is measured at this share of the max sustained rate: busy, with 20 % headroom. */
export const FRESHNESS_LOAD_SHARE = 0.8

/**
 * The load runs this long before its samples count. From idle, the uploads of the first 1-2 s came
 * back in up to ~1.1 s while the pipeline's batches grew to the rate, then settled at ~300-500 ms,
 * also with the engine left idle for 15 s first (measured at `9dc878c`; docs/performance.md): a
 * start-up transient, not the latency at a sustained rate, which is what the figure is about. Their
 * freshness is still reported (`warmUp`).
 */
export const FRESHNESS_WARM_UP_MS = 2500

/**
 * Freshness at a fixed rate (80 % of the max sustained rate measured earlier in the run): uploads are
 * sent open-loop; a sample of them (at most `maxSampling` at a time, so the polling itself stays a
 * small load) have their receipt polled until `done`, every `pollMs` (25 ms) at first and then every
 * 5 % of the time waited so far, at most 100 ms (each receipt read is a query of the engine, two
 * once done with rejected lines, three or four once split with a ClickHouse server: the polling
 * must not become a load of its own), so the error stays under 5 %; the time from the 202 to
 * `done` is the freshness of that upload.
 */
export async function freshness(
  ctx: BenchContext,
  options: {
    app: string
    source: BodySource
    eventsPerBody: number
    maxSustainedEventsPerSecond: number
    /** How long samples are taken, after the warm-up. */
    durationMs: number
    warmUpMs?: number
    pollMs?: number
    maxSampling?: number
  },
): Promise<FreshnessResult> {
  const targetEventsPerSecond = options.maxSustainedEventsPerSecond * FRESHNESS_LOAD_SHARE
  const rate = Math.max(0.5, targetEventsPerSecond / options.eventsPerBody)
  const pollMs = options.pollMs ?? 25
  const maxSampling = options.maxSampling ?? 3
  const statuses: StatusCounts = {}
  const latencies: number[] = []
  const warmUpLatencies: number[] = []
  const points: [number, number][] = []
  const pollers = new Set<Promise<void>>()
  const poll = new HttpClient(ctx.sut.url, maxSampling + 1)
  let acceptedEvents = 0
  let timedOut = 0
  const readMs: number[] = []
  const startedAtS = sinceRun(ctx)
  const warmUpMs = options.warmUpMs ?? FRESHNESS_WARM_UP_MS
  const samplingFrom = performance.now() + warmUpMs

  const follow = async (tx: string, acceptedAt: number) => {
    const deadline = Math.min(acceptedAt + 30_000, ctx.budgetEnd)
    while (performance.now() < deadline) {
      const res = await poll.request('GET', `/v0/uploads/${tx}`, { Authorization: ctx.tenant.auth })
      readMs.push(res.ms)
      if (res.status === 200 && (JSON.parse(res.body) as { state: string }).state === 'done') {
        if (acceptedAt < samplingFrom) return void warmUpLatencies.push(res.at - acceptedAt)
        latencies.push(res.at - acceptedAt)
        points.push([sinceRun(ctx, acceptedAt) - startedAtS, res.at - acceptedAt])
        return
      }
      await sleep(pollDelay(pollMs, performance.now() - acceptedAt))
    }
    timedOut++
  }

  ctx.progress.start('freshness', () => {
    const s = summarize(latencies)
    return `${rate.toFixed(1)} bodies/s (${Math.round(rate * options.eventsPerBody)} ev/s), ${s.count} samples, p50 ${Math.round(s.p50 ?? 0)} ms`
  })
  const { value: loop, cpu } = await measureCpu(ctx, async () => {
    const result = await openLoop({
      ratePerSecond: rate,
      durationMs: warmUpMs + options.durationMs,
      maxInFlight: 64,
      send: async () => {
        const body: BodyInstance | undefined = options.source.next()
        if (!body) return
        const res = await ctx.sut.http.request(
          'POST',
          '/v0/uploads',
          { Authorization: ctx.tenant.auth, ...options.source.headers },
          body.body,
        )
        countStatus(statuses, res)
        if (res.status !== 202) return
        acceptedEvents += body.events
        if (pollers.size < maxSampling) {
          const tx = (JSON.parse(res.body) as { transaction_id: string }).transaction_id
          const p: Promise<void> = follow(tx, res.at).finally(() => pollers.delete(p))
          pollers.add(p)
        }
      },
    })
    ctx.progress.update(() => `waiting for ${pollers.size} sampled receipts`)
    await Promise.all([...pollers])
    return result
  })
  poll.close()
  ctx.progress.stop()
  return {
    name: 'freshness',
    app: options.app,
    loadShare: FRESHNESS_LOAD_SHARE,
    targetBodiesPerSecond: rate,
    targetEventsPerSecond: rate * options.eventsPerBody,
    sendMs: loop.elapsedMs,
    sent: loop.sent,
    skipped: loop.skipped,
    statuses,
    acceptedEventsPerSecond: perSecond(acceptedEvents, loop.elapsedMs),
    samples: latencies.length,
    timedOut,
    polls: readMs.length,
    receiptReadMs: summarize(readMs),
    freshnessMs: summarize(latencies),
    freshnessPoints: points,
    warmUp: { ms: warmUpMs, freshnessMs: summarize(warmUpLatencies) },
    cpu,
  }
}

/** Poll every `minMs` at first, then every 5 % of the time waited, at most 100 ms. */
export const pollDelay = (minMs: number, waitedMs: number) => Math.min(100, Math.max(minMs, waitedMs / 20))
