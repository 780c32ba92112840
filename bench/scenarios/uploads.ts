import {
  expectedCounters,
  instantiate,
  type BodyInstance,
  type PlainTemplate,
  type UuidSpace,
} from '../generate.ts'
import { warmUp } from '../baselines/run.ts'
import { closedLoop, sleep, type HttpResult } from '../http.ts'
import { cpuSnapshot, cpuUse, flushDirtyPages, type CpuSnapshot, type CpuUse } from '../machine.ts'
import type { RoleCpu, ThreadCpu } from '../sluice.ts'
import { perSecond, ratesOfCounter, summarize, Timeline, type LatencySummary } from '../stats.ts'
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

export interface BodySource {
  kind: 'plain' | 'gzip'
  headers: Record<string, string>
  /** A body with fresh uuids, or undefined when the pre-generated supply is used up. */
  next(): BodyInstance | undefined
}

export const PLAIN_HEADERS = { 'Content-Type': 'application/json' }
export const GZIP_HEADERS = { 'Content-Type': 'application/x-gzip' }

/** Plain bodies: templates in turn, uuids patched per body (cheap), duplicates of the previous body. */
export function plainSource(templates: readonly PlainTemplate[], space: UuidSpace): BodySource {
  let i = 0
  let previous: BodyInstance | undefined
  return {
    kind: 'plain',
    headers: PLAIN_HEADERS,
    next() {
      const template = templates[i++ % templates.length]!
      previous = instantiate(template, space.take(template.freshCount), previous)
      return previous
    },
  }
}

/** Gzip bodies generated before timing, each used once. */
export function gzipSource(instances: readonly BodyInstance[]): BodySource {
  let i = 0
  return { kind: 'gzip', headers: GZIP_HEADERS, next: () => instances[i++] }
}

/** Sends one upload; on 429/503 waits (at most 200 ms, so the pipeline stays saturated) and retries. */
export async function sendUntilAccepted(
  ctx: BenchContext,
  source: BodySource,
  body: BodyInstance,
  deadline: number,
  onAnswer: (res: HttpResult) => void,
): Promise<HttpResult | undefined> {
  const headers = { Authorization: ctx.tenant.auth, ...source.headers }
  for (;;) {
    const res = await ctx.sut.http.request('POST', '/v0/uploads', headers, body.body)
    onAnswer(res)
    if (res.status === 202) return res
    if (res.status !== 429 && res.status !== 503 && res.status !== 'error') return undefined
    if (performance.now() >= deadline) return undefined
    await sleep(Math.min(200, (res.retryAfterS ?? 0.2) * 1000))
  }
}

/** What one scenario's senders got back: every answer by status, and the bodies accepted. */
class UploadTally {
  readonly statuses: StatusCounts = {}
  readonly latencies: number[] = []
  readonly timeline = new Timeline()
  requests = 0
  acceptedBodies = 0
  acceptedBytes = 0
  acceptedLines = 0

  get shed(): number {
    return (this.statuses['429'] ?? 0) + (this.statuses['503'] ?? 0)
  }

  /** Posts a body until it is accepted or refused for good (sendUntilAccepted); true if accepted. */
  async send(ctx: BenchContext, source: BodySource, body: BodyInstance, deadline: number): Promise<boolean> {
    const res = await sendUntilAccepted(ctx, source, body, deadline, (r) => {
      this.requests++
      countStatus(this.statuses, r)
      if (r.status !== 202) this.timeline.add('refused', 1, r.at)
    })
    if (!res) return false
    this.acceptedBodies++
    this.acceptedBytes += body.body.length
    this.acceptedLines += body.events
    this.latencies.push(res.ms)
    this.timeline.add('bytes', body.body.length, res.at)
    this.timeline.add('events', body.events, res.at)
    return true
  }
}

export interface EdgeResult {
  name: string
  kind: 'plain' | 'gzip'
  concurrency: number
  sendMs: number
  requests: number
  statuses: StatusCounts
  acceptedBodies: number
  acceptedBytes: number
  acceptedBytesPerSecond: number
  acceptedEventsPerSecond: number
  acceptedLatencyMs: LatencySummary
  timeline: { accepted: [number, number][]; refused: [number, number][] }
  cpu: CpuUse
  /** CPU seconds Sluice spent by kind of thread during the scenario. */
  threads?: ThreadCpu
}

/**
 * The edge at its max rate: `concurrency` senders post bodies back to back, in timed windows
 * (interleaved with the edge floor's: run-scenarios.ts); accepted bytes/s over the windows'
 * summed time against the floor's on the same bodies is edge_ratio. Runs on a Sluice of its own
 * whose backlog is discarded afterwards (see bench/README.md).
 */
export class EdgeBurst {
  private readonly tally = new UploadTally()
  private sendMs = 0
  private readonly cpuTicks: CpuSnapshot = { at: 0, busy: 0, total: 0, bench: 0, sluice: 0 }
  private threads: ThreadCpu | undefined = { main: 0, cpu_pool: 0, engine: 0, node: 0 }

  constructor(
    private readonly ctx: BenchContext,
    private readonly options: { name: string; source: BodySource; concurrency: number },
  ) {}

  /**
   * The same untimed warm-up as the baselines' servers get (sockets opened, hot paths compiled):
   * without it the edge's first requests on a fresh process were timed and the floor's were not.
   */
  async warmUp(): Promise<void> {
    const { ctx, options } = this
    flushDirtyPages()
    await warmUp({
      concurrency: options.concurrency,
      next: () => options.source.next(),
      send: async (body) => {
        await ctx.sut.http.request(
          'POST',
          '/v0/uploads',
          { Authorization: ctx.tenant.auth, ...options.source.headers },
          body.body,
        )
      },
    })
  }

  /** One timed window of `durationMs`; the result sums every window. */
  async window(durationMs: number): Promise<void> {
    const { ctx, options, tally } = this
    ctx.progress.start(options.name, () => {
      const r = tally.timeline.rates('bytes')
      const last = r[r.length - 2]?.[1] ?? r[r.length - 1]?.[1] ?? 0
      return `accepting ${(last / 1048576).toFixed(1)} MB/s, ${tally.acceptedBodies} bodies, 429/503: ${tally.shed}`
    })
    try {
      flushDirtyPages()
      const threadsBefore = this.threads && (await ctx.sut.threadCpu())
      const before = cpuSnapshot(ctx.sut.pid)
      const deadline = performance.now() + durationMs
      const { elapsedMs } = await closedLoop({
        concurrency: options.concurrency,
        durationMs,
        next: () => options.source.next(),
        send: async (body) => {
          await tally.send(ctx, options.source, body, deadline)
        },
      })
      const after = cpuSnapshot(ctx.sut.pid)
      const threadsAfter = threadsBefore && (await ctx.sut.threadCpu())
      this.sendMs += elapsedMs
      for (const k of ['at', 'busy', 'total', 'bench', 'sluice'] as const)
        this.cpuTicks[k] += after[k] - before[k]
      if (!threadsBefore || !threadsAfter || !this.threads) this.threads = undefined
      else for (const k of THREAD_KINDS) this.threads[k] += threadsAfter[k] - threadsBefore[k]
    } finally {
      ctx.progress.stop()
    }
  }

  /** The windows' measurement as one: counts summed, rates over their summed time. */
  result(): EdgeResult {
    const { options, tally } = this
    const zero: CpuSnapshot = { at: 0, busy: 0, total: 0, bench: 0, sluice: 0 }
    return {
      name: options.name,
      kind: options.source.kind,
      concurrency: options.concurrency,
      sendMs: this.sendMs,
      requests: tally.requests,
      statuses: tally.statuses,
      acceptedBodies: tally.acceptedBodies,
      acceptedBytes: tally.acceptedBytes,
      acceptedBytesPerSecond: perSecond(tally.acceptedBytes, this.sendMs),
      acceptedEventsPerSecond: perSecond(tally.acceptedLines, this.sendMs),
      acceptedLatencyMs: summarize(tally.latencies),
      timeline: { accepted: tally.timeline.rates('events'), refused: tally.timeline.rates('refused') },
      cpu: cpuUse(zero, this.cpuTicks),
      ...(this.threads ? { threads: { ...this.threads } } : {}),
    }
  }
}

const THREAD_KINDS = ['main', 'cpu_pool', 'engine', 'node'] as const satisfies readonly (keyof ThreadCpu)[]

export interface EndToEndResult {
  name: string
  kind: 'plain' | 'gzip'
  app: string
  concurrency: number
  /** Most events accepted but not yet queryable at any time (the senders wait above it). */
  window: number
  startedAtS: number
  sendMs: number
  exhausted: boolean
  requests: number
  statuses: StatusCounts
  acceptedBodies: number
  acceptedBytes: number
  acceptedLines: number
  /** Distinct event uuids the accepted bodies ask to store. */
  expectedStored: number
  acceptedEventsPerSecond: number
  acceptedLatencyMs: LatencySummary
  stored: number
  drainComplete: boolean
  /** Seconds from the first send until the last event was queryable. */
  queryableAfterS: number
  queryableEventsPerSecond: number
  timeline: { accepted: [number, number][]; refused: [number, number][]; queryable: [number, number][] }
  cpu: CpuUse
  /** CPU seconds Sluice spent by kind of thread, from the first send until all was queryable. */
  threads?: ThreadCpu
  /** Distributed mode: CPU seconds of each process over the same span (RoleCpu). */
  roles?: RoleCpu
}

/**
 * End to end at the max sustained rate: senders post bodies as fast as Sluice accepts them, but
 * keep at most `window` events accepted and not yet queryable (so the backlog, and the drain at
 * the end, stay bounded: the rate settles at what the whole pipeline sustains). After the
 * scenario's time the senders stop and the scenario waits until every accepted event is
 * queryable. Events/s made queryable against chdb's own INSERT of the same events is e2e_ratio;
 * with plain bodies it is also the max sustained rate that freshness and overload are run at.
 */
export async function endToEnd(
  ctx: BenchContext,
  options: {
    name: string
    app: string
    source: BodySource
    durationMs: number
    concurrency: number
    window: number
  },
): Promise<EndToEndResult> {
  const tally = new UploadTally()
  const accepted = new CounterSet()
  let exhausted = false
  const startedAtS = sinceRun(ctx)
  const poller = new QueryablePoller(ctx, options.app, 250)
  ctx.progress.start(options.name, () => {
    const q = ratesOfCounter(poller.samples.slice(-5))
    const rate = q.length > 0 ? q.reduce((a, [, v]) => a + v, 0) / q.length : 0
    return `${Math.round(rate)} ev/s queryable, ${poller.last}/${accepted.size} queryable, ${tally.acceptedBodies} bodies, 429/503: ${tally.shed}`
  })
  const {
    value: drained,
    cpu,
    threads,
    roles,
  } = await measureCpu(ctx, async () => {
    const deadline = performance.now() + options.durationMs
    const { elapsedMs } = await closedLoop({
      concurrency: options.concurrency,
      durationMs: options.durationMs,
      next: () => {
        const b = options.source.next()
        if (!b) exhausted = true
        return b
      },
      before: async () => {
        while (accepted.size - poller.last > options.window && performance.now() < deadline) await sleep(20)
      },
      send: async (body) => {
        if (await tally.send(ctx, options.source, body, deadline))
          for (const c of expectedCounters(body)) accepted.add(c)
      },
    })
    ctx.progress.update(() => `draining: ${poller.last}/${accepted.size} queryable`)
    const drain = await waitQueryable(ctx, options.app, accepted.size, { maxMs: ctx.profile.drainMs })
    return { elapsedMs, drain }
  })
  await poller.stop()
  ctx.progress.stop()
  const queryableAfterS = drained.drain.reachedAt - startedAtS
  return {
    name: options.name,
    kind: options.source.kind,
    app: options.app,
    concurrency: options.concurrency,
    window: options.window,
    startedAtS,
    sendMs: drained.elapsedMs,
    exhausted,
    requests: tally.requests,
    statuses: tally.statuses,
    acceptedBodies: tally.acceptedBodies,
    acceptedBytes: tally.acceptedBytes,
    acceptedLines: tally.acceptedLines,
    expectedStored: accepted.size,
    acceptedEventsPerSecond: perSecond(tally.acceptedLines, drained.elapsedMs),
    acceptedLatencyMs: summarize(tally.latencies),
    stored: drained.drain.count,
    drainComplete: drained.drain.complete,
    queryableAfterS,
    queryableEventsPerSecond: queryableAfterS > 0 ? drained.drain.count / queryableAfterS : 0,
    timeline: {
      accepted: tally.timeline.rates('events'),
      refused: tally.timeline.rates('refused'),
      queryable: poller.samples.map(([t, n]): [number, number] => [t - startedAtS, n]),
    },
    cpu,
    ...(threads ? { threads } : {}),
    ...(roles ? { roles } : {}),
  }
}
