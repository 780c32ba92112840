import type { BenchRun } from './bench-run.ts'
import { BaselineServer, combineBareResults, type BareResult } from './baselines/run.ts'
import type { BodyInstance } from './generate.ts'
import type { BenchLoad } from './load.ts'
import { baselineLoad, floorLogDir } from './run-baselines.ts'
import { settle, type BenchContext } from './scenarios/context.ts'
import { stagesLine } from './freshness-stages.ts'
import { notStored } from './report.ts'
import { freshness, FRESHNESS_WARM_UP_MS } from './scenarios/freshness.ts'
import { overload } from './scenarios/overload.ts'
import { profiles } from './scenarios/profiles.ts'
import { sdkSessions } from './scenarios/sdk.ts'
import { runStorage } from './scenarios/storage.ts'
import { sustained } from './scenarios/sustained.ts'
import {
  EdgeBurst,
  endToEnd,
  GZIP_HEADERS,
  PLAIN_HEADERS,
  gzipSource,
  plainSource,
  type BodySource,
} from './scenarios/uploads.ts'
import { assertAlive, SluiceLauncher } from './sluice-launcher.ts'
import { RssSampler, type SluiceUnderTest } from './sluice.ts'

/** The scenarios, in order: edge bursts on a Sluice of their own, then the rest on the main one. */
export async function runScenarios(run: BenchRun, load: BenchLoad): Promise<void> {
  const launcher = new SluiceLauncher(run)
  launcher.catchSignals()
  // Edge bursts, on a Sluice of their own: the max-rate bodies pile up on its bus and are discarded
  // with it, so they never hold up the end-to-end scenarios.
  if (!run.options.skip.has('edge')) await edgeBursts(run, load, launcher)
  await onMainSluice(run, load, launcher)
  launcher.releaseSignals()
}

async function edgeBursts(run: BenchRun, load: BenchLoad, launcher: SluiceLauncher): Promise<void> {
  const { profile } = run.options
  const edgeSut = await launcher.start('start-sluice (edge)', 'edge')
  if (!edgeSut) return
  const rssEdge = new RssSampler(edgeSut.pid, run.wallStart)
  const ctx = await launcher.context(' (edge)', edgeSut, rssEdge, load)
  if (ctx) {
    // The very bodies the floor got (the plain templates as generated, gzip bodies as sent), cycled:
    // making each body afresh (a 72 KB copy and new uuids per send, the e2e scenarios' source) costs
    // the bench's own process CPU on the two cores the edge shares, which the floor's client never
    // spends (0.66 against 0.34–0.47 of a core, measured at `9df4044`). The edge instance does not
    // read the events, so repeated uuids change nothing it does.
    const sources = {
      plain: cycle(
        'plain',
        PLAIN_HEADERS,
        load.plain.plain.map((t) => fixedInstance(t.buffer, t.kinds)),
      ),
      gzip: cycle(
        'gzip',
        GZIP_HEADERS,
        load.gzip.map((x) => x.instance),
      ),
    }
    for (const kind of ['plain', 'gzip'] as const) {
      const floor = run.options.skip.has('baselines')
        ? undefined
        : await run.step(`baseline:floor-http:${kind} (start)`, () =>
            BaselineServer.start('floor', baselineLoad(run, load, kind), floorLogDir(run, kind)),
          )
      try {
        await run.step(`edge-${kind}`, () => interleaved(ctx, edgeSut, floor, sources[kind], kind))
      } finally {
        floor?.stop()
      }
    }
  }
  rssEdge.stop()
  // Its backlog is of no interest: no graceful drain (unless profiling: the profile is written at exit).
  if (run.options.cpuProf) await run.step('stop-sluice (edge)', () => edgeSut.stop(20_000))
  else await run.step('kill-sluice (edge)', () => edgeSut.kill())

  /**
   * The edge scenario of one body kind and its floor, timed in alternating windows of equal
   * length (floor first, then edge first, …), each with the other process stopped (SIGSTOP): its
   * background work (timers, idle pipelines, the engine's threads) would otherwise take CPU from
   * the one timed. This machine's disk and CPU speed change within seconds (edge-plain against the
   * floor timed in one block of each, bracketed: 0.57, 0.83 and 1.04 in three edge-only runs of
   * one commit, measured at `dc273f7`), so each figure is the sum of windows spread over the same
   * minutes.
   */
  async function interleaved(
    ctx: BenchContext,
    sut: SluiceUnderTest,
    floor: BaselineServer | undefined,
    source: BodySource,
    kind: 'plain' | 'gzip',
  ): Promise<void> {
    const pauseEdge = (stopped: boolean) =>
      sut.alive && process.kill(sut.pid, stopped ? 'SIGSTOP' : 'SIGCONT')
    const alone = async <T>(who: 'edge' | 'floor', work: () => Promise<T>): Promise<T> => {
      if (who === 'edge') floor?.pause(true)
      else pauseEdge(true)
      try {
        return await work()
      } finally {
        if (who === 'edge') floor?.pause(false)
        else pauseEdge(false)
      }
    }
    const burst = new EdgeBurst(ctx, { name: `edge-${kind}`, source, concurrency: profile.concurrency })
    const floorParts: BareResult[] = []
    const floorLatencies: number[] = []
    const windowMs = profile.edgeMs / profile.edgeWindows
    if (floor) await alone('floor', () => floor.warmUp())
    await alone('edge', () => burst.warmUp())
    for (let w = 0; w < profile.edgeWindows; w++) {
      const order = w % 2 === 0 ? (['floor', 'edge'] as const) : (['edge', 'floor'] as const)
      for (const who of order) {
        assertAlive(sut)
        if (who === 'edge') await alone('edge', () => burst.window(windowMs))
        else if (floor)
          floorParts.push(await alone('floor', () => floor.timed(windowMs, run.progress, floorLatencies)))
      }
    }
    const r = burst.result()
    run.results.scenarios.edge.push(r)
    run.log(
      `    accepted ${(r.acceptedBytesPerSecond / 1048576).toFixed(1)} MB/s (${Math.round(r.acceptedEventsPerSecond)} ev/s, ${r.acceptedBodies} bodies); ` +
        `answers ${JSON.stringify(r.statuses)}; CPU sluice ${r.cpu.sluice.toFixed(2)} bench ${r.cpu.bench.toFixed(2)} other ${r.cpu.other.toFixed(2)}`,
    )
    if (floorParts.length > 0) {
      const f = combineBareResults(floorParts, floorLatencies)
      ;(run.results.baselines.floor ??= []).push(f)
      run.log(
        `    floor HTTP ${kind}: ${(f.bytesPerSecond / 1048576).toFixed(1)} MB/s, ${Math.round(f.requestsPerSecond)} req/s`,
      )
    }
  }
}

/** A body source cycling over fixed bodies (uuids repeat: for the edge bursts only). */
function cycle(
  kind: BodySource['kind'],
  headers: Record<string, string>,
  bodies: readonly BodyInstance[],
): BodySource {
  let i = 0
  return { kind, headers, next: () => bodies[i++ % bodies.length] }
}

/** A template's bytes as they are, as a body to send (its counters are not asked for). */
function fixedInstance(body: Buffer, kinds: Uint8Array): BodyInstance {
  return { body, counters: new Float64Array(kinds.length), kinds, events: kinds.length }
}

/** The main Sluice: SDK sessions, end to end, freshness, profiles, overload; its RSS throughout. */
async function onMainSluice(run: BenchRun, load: BenchLoad, launcher: SluiceLauncher): Promise<void> {
  const sut = await launcher.start('start-sluice', 'main')
  if (!sut) return
  const rss = new RssSampler(sut.pid, run.wallStart)
  const ctx = await launcher.context('', sut, rss, load)
  if (!ctx) {
    await sut.stop()
    return
  }
  // Distributed mode benches no other area (segmentation to dashboard are the embedded engine's),
  // and its baselines, edge instance (three processes started one after another), bursts and the
  // main Sluice's start take the ingestion part's whole quick budget on a shared machine: the main
  // Sluice's scenarios get a budget of their own, as each area does.
  if (run.options.distributed) {
    run.startBudget('main Sluice scenarios')
    ctx.budgetEnd = run.budgetEnd
  }
  if (!run.options.skip.has('sdk'))
    run.results.scenarios.sdk = await run.step('sdk-sessions', async () => {
      const r = await sdkSessions(ctx, load.sdk, {
        maxMs: run.options.profile.name === 'quick' ? 60_000 : 300_000,
      })
      run.log(
        `    ${r.rows} SDK rows, ${Math.round(r.rowsPerSecond)} rows/s to receipts done${r.complete ? '' : ' (INCOMPLETE)'}`,
      )
      return r
    })
  const maxSustained = await endToEndScenarios(run, load, ctx)
  await sustainedRateScenarios(run, load, ctx, maxSustained)
  await runStorage(run, sut)
  rss.stop()
  run.results.rss = rss.samples.map(([t, v]): [number, number] => [Math.round(t * 100) / 100, Math.round(v)])
  const code = await run.step('stop-sluice', () => sut.stop())
  if (code !== 0 && code !== undefined) run.results.errors.push(`Sluice exited with ${code} on SIGTERM`)
}

/** e2e-plain and e2e-gzip; gives the max sustained rate the scenarios after them are set by. */
async function endToEndScenarios(run: BenchRun, load: BenchLoad, ctx: BenchContext): Promise<number> {
  const { profile, skip } = run.options
  const { apps, spaces, plain, gzip } = load
  const e2e = async (name: string, app: string, source: BodySource, eventsPerBody: number) => {
    assertAlive(ctx.sut)
    const r = await endToEnd(ctx, {
      name,
      app,
      source,
      durationMs: profile.e2eMs,
      concurrency: profile.e2eConcurrency,
      window: Math.max(profile.window, Math.round(profile.windowBodies * eventsPerBody)),
    })
    run.results.scenarios.e2e.push(r)
    run.log(
      `    ${Math.round(r.queryableEventsPerSecond)} ev/s queryable (accepted ${Math.round(r.acceptedEventsPerSecond)} ev/s); stored ${r.stored}/${r.expectedStored}${r.drainComplete ? '' : ' (drain incomplete)'}; ` +
        `answers ${JSON.stringify(r.statuses)}; CPU sluice ${r.cpu.sluice.toFixed(2)} bench ${r.cpu.bench.toFixed(2)} other ${r.cpu.other.toFixed(2)}`,
    )
    return r
  }
  const plainResult = skip.has('plain')
    ? undefined
    : await run.step('e2e-plain', () =>
        e2e('e2e-plain', apps.plain, plainSource(plain.plain, spaces.plain), profile.eventsPerPlainBody),
      )
  const gzipResult = skip.has('gzip')
    ? undefined
    : await run.step('e2e-gzip', () =>
        e2e(
          'e2e-gzip',
          apps.gzip,
          gzipSource(gzip.map((x) => x.instance)),
          gzip.reduce((sum, x) => sum + x.instance.events, 0) / Math.max(1, gzip.length),
        ),
      )
  // The max sustained rate: events/s made queryable with plain bodies (what freshness and overload use).
  const maxSustained = plainResult?.queryableEventsPerSecond || gzipResult?.queryableEventsPerSecond || 2000
  run.results.run.notes.push(
    `Max sustained rate (events/s made queryable, plain bodies): ${Math.round(maxSustained)}; freshness runs at 80 % of it, overload at twice.`,
  )
  return maxSustained
}

/** Freshness, profiles and overload, each run only if it fits the time budget. */
async function sustainedRateScenarios(
  run: BenchRun,
  load: BenchLoad,
  ctx: BenchContext,
  maxSustained: number,
): Promise<void> {
  const { profile } = run.options
  const { apps, spaces, plain } = load
  const { results } = run
  if (run.fits('freshness', FRESHNESS_WARM_UP_MS + profile.freshnessMs + 5000))
    results.scenarios.freshness = await run.step('freshness', async () => {
      assertAlive(ctx.sut)
      const idle = await settle(ctx, 20_000)
      if (!idle.idle)
        results.run.notes.push('freshness started with a backlog still on the bus (not idle after 20 s)')
      const r = await freshness(ctx, {
        app: apps.fresh,
        source: plainSource(plain.fresh, spaces.fresh),
        eventsPerBody: profile.eventsPerPlainBody,
        maxSustainedEventsPerSecond: maxSustained,
        durationMs: profile.freshnessMs,
        maxDurationMs: profile.freshnessMaxMs,
      })
      run.log(
        `    ${r.targetBodiesPerSecond.toFixed(1)} bodies/s; ${r.samples} samples: p50 ${Math.round(r.freshnessMs.p50 ?? NaN)} ms, p90 ${Math.round(r.freshnessMs.p90 ?? NaN)} ms, p99 ${Math.round(r.freshnessMs.p99 ?? NaN)} ms, max ${Math.round(r.freshnessMs.max ?? NaN)} ms; answers ${JSON.stringify(r.statuses)}` +
          (r.stages ? `\n    ${stagesLine(r.stages)}` : ''),
      )
      return r
    })

  if (run.fits('profiles', profile.profilesMs + 3000))
    results.scenarios.profiles = await run.step('profiles', async () => {
      assertAlive(ctx.sut)
      const r = await profiles(ctx, {
        bodies: load.profileBodies,
        durationMs: profile.profilesMs,
        concurrency: profile.concurrency,
        customers: profile.profileCustomers,
      })
      if (r.skipped !== undefined) run.log(`    skipped: ${r.skipped}`)
      else
        run.log(
          `    ${Math.round(r.patchesPerSecond)} PATCH/s; read-your-writes p50 ${Math.round(r.readYourWritesMs.p50 ?? NaN)} ms, p99 ${Math.round(r.readYourWritesMs.p99 ?? NaN)} ms (${r.readYourWritesMs.count} samples); answers ${JSON.stringify(r.statuses)}`,
        )
      return r
    })

  if (run.fits('overload', profile.overloadMs + 10_000))
    results.scenarios.overload = await run.step('overload', async () => {
      assertAlive(ctx.sut)
      await settle(ctx, 10_000)
      const r = await overload(ctx, {
        app: apps.overload,
        source: plainSource(plain.overload, spaces.overload),
        space: spaces.overload,
        eventsPerBody: profile.eventsPerPlainBody,
        maxSustainedEventsPerSecond: maxSustained,
        durationMs: profile.overloadMs,
        ...(profile.overloadAfterShedMs === undefined ? {} : { afterShedMs: profile.overloadAfterShedMs }),
        drainMs: profile.overloadDrainMs,
      })
      run.log(
        `    ${r.targetBodiesPerSecond.toFixed(1)} bodies/s asked; answers ${JSON.stringify(r.statuses)}; RSS max ${Math.round(r.rssMaxMb ?? NaN)} MB; ` +
          `${r.acceptedEvents} accepted events, ${notStored(r)}, ${r.storedTwice} stored twice; drain ${r.drainComplete ? 'complete' : 'INCOMPLETE'} in ${(r.drainMs / 1000).toFixed(1)} s`,
      )
      return r
    })

  // Last: it grows the tables by 10M rows, which would slow every scenario after it.
  if (load.sustained.length > 0 && !run.options.skip.has('sustained'))
    results.scenarios.sustained = await run.step('sustained', async () => {
      assertAlive(ctx.sut)
      await settle(ctx, 60_000)
      const r = await sustained(ctx, {
        app: apps.sustained,
        bodies: load.sustained,
        concurrency: profile.concurrency,
        window: Math.max(profile.window, profile.windowBodies * 7400),
      })
      run.log(
        `    ${r.stored.toLocaleString('en-US')} events in ${r.queryableAfterS.toFixed(0)} s: ${Math.round(r.queryableEventsPerSecond)} ev/s; ` +
          `first minute ${Math.round(r.firstMinuteEventsPerSecond)} ev/s, last minute ${Math.round(r.lastMinuteEventsPerSecond)} ev/s; RSS max ${Math.round(r.rssMaxMb ?? NaN)} MB`,
      )
      return r
    })
}
