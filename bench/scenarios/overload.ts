import { expectedCounters, type UuidSpace } from '../generate.ts'
import { openLoop } from '../http.ts'
import type { CpuUse } from '../machine.ts'
import { quote } from '../sluice.ts'
import { perSecond, summarize, Timeline, type LatencySummary } from '../stats.ts'
import {
  CounterSet,
  countStatus,
  measureCpu,
  QueryablePoller,
  sinceRun,
  waitQueryable,
  type BenchContext,
  type StatusCounts,
} from './context.ts'
import type { BodySource } from './uploads.ts'

export interface OverloadResult {
  name: 'overload'
  app: string
  targetBodiesPerSecond: number
  targetEventsPerSecond: number
  sendMs: number
  sent: number
  skipped: number
  statuses: StatusCounts
  /** Share of answers that were 429 or 503. */
  shedShare: number
  /** Seconds from the first send to the first 429/503 (undefined: never shed). */
  firstShedAfterS?: number
  latencyMs: LatencySummary
  acceptedBodies: number
  acceptedEventsPerSecond: number
  /** Distinct event uuids of accepted bodies (must each be stored exactly once). */
  acceptedEvents: number
  drainComplete: boolean
  drainMs: number
  stored: number
  lost: number
  storedTwice: number
  /** Stored uuids whose body was not answered 202 (a 503 after the body landed, or a socket error). */
  storedNotAcknowledged: number
  rssMaxMb: number | undefined
  rssHwmMb: number | undefined
  /** Highest anonymous (heaps, buffers) and file-backed (memory-mapped files) parts of the RSS. */
  rssAnonMaxMb: number | undefined
  rssFileMaxMb: number | undefined
  timeline: { accepted: [number, number][]; shed: [number, number][]; queryable: [number, number][] }
  cpu: CpuUse
}

/**
 * 2× the max sustained rate, open loop, for `durationMs`, or until the edge has been shedding load
 * for `afterShedMs` when that is given (the quick run: long enough to reach shedding, no longer):
 * counts 202/429/503, samples the Sluice process's RSS, then waits for the drain and checks that
 * every accepted event is stored exactly once (lost = accepted uuids not found).
 */
export async function overload(
  ctx: BenchContext,
  options: {
    app: string
    source: BodySource
    space: UuidSpace
    eventsPerBody: number
    maxSustainedEventsPerSecond: number
    durationMs: number
    afterShedMs?: number
    drainMs: number
  },
): Promise<OverloadResult> {
  const targetEventsPerSecond = options.maxSustainedEventsPerSecond * 2
  const rate = Math.max(1, targetEventsPerSecond / options.eventsPerBody)
  const statuses: StatusCounts = {}
  const accepted = new CounterSet()
  const latencies: number[] = []
  const timeline = new Timeline()
  let acceptedBodies = 0
  let acceptedLines = 0
  let firstShedAt: number | undefined
  const startedAtS = sinceRun(ctx)
  const poller = new QueryablePoller(ctx, options.app, 1000)
  const headers = { Authorization: ctx.tenant.auth, ...options.source.headers }
  ctx.progress.start('overload', () => {
    const shed = (statuses['429'] ?? 0) + (statuses['503'] ?? 0)
    const rss = ctx.rss.samples[ctx.rss.samples.length - 1]?.[1] ?? 0
    return `${rate.toFixed(1)} bodies/s asked, ${acceptedBodies} accepted, ${shed} shed, RSS ${Math.round(rss)} MB`
  })
  const { value, cpu } = await measureCpu(ctx, async () => {
    const loop = await openLoop({
      ratePerSecond: rate,
      durationMs: options.durationMs,
      maxInFlight: 256,
      until: () =>
        options.afterShedMs !== undefined &&
        firstShedAt !== undefined &&
        performance.now() - firstShedAt >= options.afterShedMs,
      send: async () => {
        const body = options.source.next()
        if (!body) return
        const res = await ctx.sut.http.request('POST', '/v0/uploads', headers, body.body)
        countStatus(statuses, res)
        latencies.push(res.ms)
        if (res.status === 202) {
          acceptedBodies++
          acceptedLines += body.events
          timeline.add('accepted', body.events, res.at)
          for (const c of expectedCounters(body)) accepted.add(c)
        } else if (res.status === 429 || res.status === 503) {
          timeline.add('shed', 1, res.at)
          firstShedAt ??= res.at
        }
      },
    })
    const sendEndS = sinceRun(ctx)
    ctx.progress.update(() => `draining: ${poller.last}/${accepted.size} queryable`)
    const drain = await waitQueryable(ctx, options.app, accepted.size, {
      maxMs: options.drainMs,
      stallMs: 20_000,
    })
    return { loop, drain, sendEndS }
  })
  await poller.stop()
  const rssMaxMb = ctx.rss.maxBetween(startedAtS, sinceRun(ctx))
  const parts = ctx.rss.partsBetween(startedAtS, sinceRun(ctx))
  ctx.progress.update(() => 'checking exactly-once')
  const check = await exactlyOnce(ctx, options.app, options.space, accepted)
  ctx.progress.stop()
  const answers = Object.values(statuses).reduce((a, b) => a + b, 0)
  return {
    name: 'overload',
    app: options.app,
    targetBodiesPerSecond: rate,
    targetEventsPerSecond: rate * options.eventsPerBody,
    sendMs: value.loop.elapsedMs,
    sent: value.loop.sent,
    skipped: value.loop.skipped,
    statuses,
    shedShare: answers > 0 ? ((statuses['429'] ?? 0) + (statuses['503'] ?? 0)) / answers : 0,
    ...(firstShedAt === undefined ? {} : { firstShedAfterS: sinceRun(ctx, firstShedAt) - startedAtS }),
    latencyMs: summarize(latencies),
    acceptedBodies,
    acceptedEventsPerSecond: perSecond(acceptedLines, value.loop.elapsedMs),
    acceptedEvents: accepted.size,
    drainComplete: value.drain.complete,
    drainMs: value.drain.waitedMs,
    stored: check.stored,
    lost: check.lost,
    storedTwice: check.storedTwice,
    storedNotAcknowledged: check.notAcknowledged,
    rssMaxMb,
    rssHwmMb: ctx.rss.hwmMb(),
    rssAnonMaxMb: parts.anonMb,
    rssFileMaxMb: parts.fileMb,
    timeline: {
      accepted: timeline.rates('accepted'),
      shed: timeline.rates('shed'),
      queryable: poller.samples.map(([t, n]): [number, number] => [t - startedAtS, n]),
    },
    cpu,
  }
}

/** Every accepted uuid stored exactly once: fetch the app's stored uuids and compare. */
async function exactlyOnce(ctx: BenchContext, app: string, space: UuidSpace, accepted: CounterSet) {
  const text = await ctx.sut.text(
    `SELECT uuid, count() FROM ${ctx.sut.database}.events WHERE app_id = ${quote(app)} AND source = 'server' GROUP BY uuid`,
  )
  const stored = new CounterSet()
  let storedTwice = 0
  let notAcknowledged = 0
  let rows = 0
  for (const line of text.split('\n')) {
    if (!line) continue
    const [uuid, n] = line.split('\t')
    const counter = space.parse(uuid ?? '')
    rows++
    if (Number(n) > 1) storedTwice++
    if (counter === undefined) continue
    stored.add(counter)
    if (!accepted.has(counter)) notAcknowledged++
  }
  let lost = 0
  for (const c of accepted.values()) if (!stored.has(c)) lost++
  return { stored: rows, lost, storedTwice, notAcknowledged }
}
