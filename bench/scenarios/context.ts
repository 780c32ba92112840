import type { Customer, UuidSpace } from '../generate.ts'
import type { Progress } from '../progress.ts'
import type { RoleCpu, RssSampler, SluiceUnderTest, Tenant, ThreadCpu } from '../sluice.ts'
import { cpuSnapshot, cpuUse, type CpuUse } from '../machine.ts'
import { sleep, type HttpResult } from '../http.ts'

/** How long and how hard each scenario runs: `--quick` (about 3.5 minutes on 2 cores) or the full run. */
export interface BenchProfile {
  name: 'quick' | 'full'
  customers: number
  plainTemplates: number
  eventsPerPlainBody: number
  gzipBodies: number
  concurrency: number
  baselineMs: number
  /** Edge bursts (per body kind): their time, and the windows it is timed in (the floor's alike). */
  edgeMs: number
  edgeWindows: number
  /** End-to-end sending time (per body kind), and the most events accepted but not yet queryable. */
  e2eMs: number
  /** Senders of the end-to-end scenarios (the edge bursts and profiles keep `concurrency`). */
  e2eConcurrency: number
  window: number
  /**
   * The window holds at least this many bodies: in events alone it would let only 3 gzip bodies
   * (~8,900 events each) be in flight, fewer than the splitter takes in one batch, and the rate
   * would measure the pipeline's latency instead of what it sustains.
   */
  windowBodies: number
  drainMs: number
  /** Freshness samples this long after its warm-up, at least, and on up to freshnessMaxMs until it has enough samples. */
  freshnessMs: number
  freshnessMaxMs: number
  profilesMs: number
  profileCustomers: number
  /** Overload runs this long at most, */
  overloadMs: number
  /** …or ends once the edge has shed load for this long (undefined: always overloadMs). */
  overloadAfterShedMs: number | undefined
  overloadDrainMs: number
  /** Events of the sustained scenario (0: not run); its gzip bodies are generated beforehand. */
  sustainedEvents: number
}

export const PROFILES: Record<'quick' | 'full', BenchProfile> = {
  quick: {
    name: 'quick',
    customers: 2000,
    plainTemplates: 16,
    eventsPerPlainBody: 250,
    // e2e-gzip's supply: 224 were used up just before its 10 s ended at ~150,000 events/s.
    gzipBodies: 288,
    concurrency: 16,
    baselineMs: 2500,
    // 8 windows of 0.75 s a side: with 4, the same code scored edge-plain 0.76 in a whole run and
    // 0.81 / 0.82 in two edge-only runs (measured at `5416786`).
    edgeMs: 6000,
    edgeWindows: 8,
    e2eMs: 10_000,
    e2eConcurrency: 16,
    window: 30_000,
    windowBodies: 12,
    drainMs: 30_000,
    freshnessMs: 20_000,
    freshnessMaxMs: 45_000,
    profilesMs: 6000,
    profileCustomers: 5000,
    // Long enough for the backlog to pass SLUICE_MAX_BACKLOG_SECONDS at twice the sustained rate,
    // then 3 s of shedding. 30 s is not enough since the engine's merges got cheaper (`9fec254`):
    // the plain e2e rate, the overload's yardstick, undershoots what the pipeline takes in open
    // loop, and the backlog's age reached 10 s only after ~33 s.
    overloadMs: 45_000,
    overloadAfterShedMs: 3000,
    overloadDrainMs: 40_000,
    sustainedEvents: 0,
  },
  full: {
    name: 'full',
    customers: 10_000,
    plainTemplates: 64,
    eventsPerPlainBody: 250,
    gzipBodies: 480,
    concurrency: 16,
    baselineMs: 10_000,
    edgeMs: 20_000,
    edgeWindows: 8,
    e2eMs: 60_000,
    e2eConcurrency: 16,
    window: 100_000,
    windowBodies: 12,
    drainMs: 180_000,
    freshnessMs: 45_000,
    freshnessMaxMs: 120_000,
    profilesMs: 30_000,
    profileCustomers: 40_000,
    overloadMs: 60_000,
    overloadAfterShedMs: undefined,
    overloadDrainMs: 300_000,
    sustainedEvents: 10_000_000,
  },
}

/**
 * `--quick --distributed`: the quick run scaled to what librdkafka's mock cluster and the chdb-backed
 * ClickHouse stand-in store (a few hundred events a second, one request at a time per connection),
 * so each scenario's backlog drains within the quick budget and every figure is measured. With the
 * quick profile's 16 senders and a window of 12 bodies, e2e-gzip put ~200,000 events in flight
 * (minutes of the stand-in's work) and the SDK scenario's 24,000 rows were not stored before the
 * end-to-end scenarios began, so they stored nothing and `cpu_us_per_event` had nothing to divide
 * by. The edge bursts keep 16 senders (the floor's), so `edge_ratio` means what it means embedded.
 */
export const DISTRIBUTED_QUICK: BenchProfile = {
  ...PROFILES.quick,
  customers: 500,
  e2eConcurrency: 2,
  window: 5_000,
  windowBodies: 1,
  drainMs: 25_000,
  // Against the stand-in most freshness samples wait out their 30 s and the profile reads their
  // own, so both are kept short enough to leave overload its place in the budget.
  freshnessMs: 12_000,
  freshnessMaxMs: 12_000,
  profilesMs: 4_000,
  // On Kafka only SLUICE_MAX_BUS_LAG sheds (2,000 records): at twice the stand-in's rate that is
  // minutes away, so overload shows the edge's memory under a growing backlog, not the shedding.
  overloadMs: 20_000,
  overloadDrainMs: 20_000,
}

export interface BenchContext {
  sut: SluiceUnderTest
  tenant: Tenant
  progress: Progress
  profile: BenchProfile
  customers: readonly Customer[]
  /** performance.now() at the start of the run: every time series is in seconds since then. */
  t0: number
  rss: RssSampler
  log: (line: string) => void
  uuidSpace: (scenario: string) => UuidSpace
  /** performance.now() by which a quick run must be done with its waits (Infinity for a full run). */
  budgetEnd: number
}

/** Milliseconds left before the run's time budget ends. */
export const remaining = (ctx: BenchContext) => Math.max(0, ctx.budgetEnd - performance.now())

/** Statuses of answers, by code; a failed socket by its error (`error: socket hang up`). */
export type StatusCounts = Record<string, number>

export const countStatus = (counts: StatusCounts, answer: Pick<HttpResult, 'status' | 'error'>) => {
  // Failed sockets are rare and unexplained when they happen: the report keeps why.
  const key =
    answer.status === 'error' ? `error: ${(answer.error ?? 'unknown').slice(0, 80)}` : String(answer.status)
  counts[key] = (counts[key] ?? 0) + 1
}

export const sinceRun = (ctx: BenchContext, at = performance.now()) => (at - ctx.t0) / 1000

/** A set of dense non-negative integers (event uuid counters), as a growable bitmap. */
export class CounterSet {
  private bits = new Uint8Array(1024)
  size = 0

  add(n: number): void {
    const byte = n >>> 3
    if (byte >= this.bits.length) {
      const grown = new Uint8Array(Math.max(byte + 1, this.bits.length * 2))
      grown.set(this.bits)
      this.bits = grown
    }
    const mask = 1 << (n & 7)
    if ((this.bits[byte]! & mask) === 0) {
      this.bits[byte]! |= mask
      this.size++
    }
  }

  has(n: number): boolean {
    const byte = n >>> 3
    return byte < this.bits.length && (this.bits[byte]! & (1 << (n & 7))) !== 0
  }

  *values(): Generator<number> {
    for (let byte = 0; byte < this.bits.length; byte++) {
      const b = this.bits[byte]!
      if (b === 0) continue
      for (let bit = 0; bit < 8; bit++) if (b & (1 << bit)) yield byte * 8 + bit
    }
  }
}

/**
 * Runs `work` and reports where the CPU went meanwhile: cores used by Sluice, the bench and the
 * rest of the machine (/proc), and the CPU seconds Sluice spent by kind of thread (its /metrics).
 */
export async function measureCpu<T>(
  ctx: BenchContext,
  work: () => Promise<T>,
): Promise<{ value: T; cpu: CpuUse; threads?: ThreadCpu; roles?: RoleCpu }> {
  const threadsBefore = await ctx.sut.threadCpu()
  const rolesBefore = ctx.sut.roleCpu()
  const before = cpuSnapshot(ctx.sut.pid)
  const value = await work()
  const cpu = cpuUse(before, cpuSnapshot(ctx.sut.pid))
  const rolesAfter = ctx.sut.roleCpu()
  const threadsAfter = threadsBefore && (await ctx.sut.threadCpu())
  // Distributed mode: each process's CPU (edge, worker, scheduler, the stand-in's engine).
  let roles: RoleCpu | undefined
  if (ctx.sut.mode === 'distributed') {
    roles = {}
    for (const [role, seconds] of Object.entries(rolesAfter) as [keyof RoleCpu, number][]) {
      const was = rolesBefore[role]
      if (was !== undefined) roles[role] = seconds - was
    }
  }
  if (!threadsBefore || !threadsAfter) return { value, cpu, ...(roles ? { roles } : {}) }
  const threads: ThreadCpu = {
    main: threadsAfter.main - threadsBefore.main,
    cpu_pool: threadsAfter.cpu_pool - threadsBefore.cpu_pool,
    engine: threadsAfter.engine - threadsBefore.engine,
    node: threadsAfter.node - threadsBefore.node,
  }
  return { value, cpu, threads, ...(roles ? { roles } : {}) }
}

/**
 * Polls the number of queryable server-side events of an app every `everyMs` in the background:
 * the "made queryable" series of a scenario.
 */
export class QueryablePoller {
  readonly samples: [number, number][] = []
  private stopped = false
  private readonly loop: Promise<void>
  last = 0
  errors = 0

  constructor(ctx: BenchContext, app: string, everyMs = 500) {
    this.loop = (async () => {
      while (!this.stopped) {
        const t = performance.now()
        try {
          this.last = await ctx.sut.countEvents(app)
          this.samples.push([sinceRun(ctx), this.last])
        } catch {
          this.errors++
        }
        await sleep(Math.max(0, everyMs - (performance.now() - t)))
      }
    })()
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.loop
  }
}

/**
 * Waits until `expected` events of the app are queryable, or until nothing moves for `stallMs`
 * with an empty bus, or `maxMs`. Returns when the count reached its final value (run seconds).
 */
export async function waitQueryable(
  ctx: BenchContext,
  app: string,
  expected: number,
  options: { maxMs: number; stallMs?: number; everyMs?: number },
): Promise<{ count: number; complete: boolean; reachedAt: number; waitedMs: number }> {
  const started = performance.now()
  const maxMs = Math.min(options.maxMs, remaining(ctx))
  let count = -1
  let changedAt = performance.now()
  let reachedAt = sinceRun(ctx)
  for (;;) {
    let now: number
    try {
      now = await ctx.sut.countEvents(app)
    } catch {
      now = count
    }
    if (now !== count) {
      count = now
      changedAt = performance.now()
      reachedAt = sinceRun(ctx)
    }
    if (count >= expected) return { count, complete: true, reachedAt, waitedMs: performance.now() - started }
    if (performance.now() - started > maxMs)
      return { count, complete: false, reachedAt, waitedMs: performance.now() - started }
    if (performance.now() - changedAt > (options.stallMs ?? 15_000)) {
      const lag: Record<string, number> = await ctx.sut.busLag().catch(() => ({}))
      if (Object.values(lag).every((v) => v === 0))
        return { count, complete: false, reachedAt, waitedMs: performance.now() - started }
    }
    if (!ctx.sut.alive) return { count, complete: false, reachedAt, waitedMs: performance.now() - started }
    await sleep(options.everyMs ?? 200)
  }
}

/** Waits until every watched bus topic has no lag (the pipeline is idle), at most `maxMs`. */
export async function settle(ctx: BenchContext, maxMs: number): Promise<{ idle: boolean; waitedMs: number }> {
  const started = performance.now()
  maxMs = Math.min(maxMs, remaining(ctx))
  // The edge samples the lag every 500 ms: two idle samples in a row.
  let idleSamples = 0
  do {
    const lag: Record<string, number> = await ctx.sut.busLag().catch(() => ({}))
    idleSamples = Object.values(lag).every((v) => v === 0) ? idleSamples + 1 : 0
    if (idleSamples >= 2) return { idle: true, waitedMs: performance.now() - started }
    await sleep(300)
  } while (performance.now() - started < maxMs)
  return { idle: false, waitedMs: performance.now() - started }
}
