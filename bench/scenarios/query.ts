import { homedir } from 'node:os'
import { join } from 'node:path'
import type { BenchRun } from '../bench-run.ts'
import { runEngineChild } from '../engine-child.ts'
import type { Figure, RunMeasures, ScenarioReporter } from '../figures.ts'
import type { Progress } from '../progress.ts'
import { round, summarize, type LatencySummary } from '../stats.ts'

/**
 * The data sets: the issue's 20M events over 90 days and 50 apps, and 1M for --quick. `threshold`
 * is the metric condition's (`occurrences > threshold` per day and event name of the queried app).
 */
export const QUERY_SETS = {
  full: {
    label: '20m',
    apps: 50,
    installs: 1_000_000,
    sessions: 3_000_000,
    events: 20_000_000,
    runs: 20,
    threshold: 500,
  },
  quick: {
    label: '1m',
    apps: 50,
    installs: 50_000,
    sessions: 150_000,
    events: 1_000_000,
    runs: 10,
    threshold: 25,
  },
} as const
/** Events inserted each way (with and without the rollup views) to measure their upkeep. */
const UPKEEP_EVENTS = { full: 1_000_000, quick: 200_000 } as const

interface ShapeOutcome {
  name: string
  /** Where Sluice answered from: `raw` or `query_rollup`. */
  source: string
  estimated: string[]
  rows: number
  /** The Query API's answer and the hand-written one agree (estimates within the documented bound). */
  equal: boolean
  /** Largest relative difference of an estimated metric from the hand-written exact count. */
  maxEstimateError: number
  apiMs: number[]
  handMs: number[]
  apiCpuMs: number[]
  handCpuMs: number[]
}

export interface QueryShapeResult {
  name: string
  source: string
  estimated: string[]
  rows: number
  equal: boolean
  maxEstimateError: number
  apiMs: LatencySummary
  handMs: LatencySummary
  apiCpuMs: LatencySummary
  handCpuMs: LatencySummary
  /** Hand-written p50 ÷ Query API p50. */
  ratio: number
}

export type QueryResult =
  | { name: 'query'; skipped: string }
  | {
      name: 'query'
      skipped?: undefined
      set: string
      rows: Record<string, number>
      reused: boolean
      generationMs: number
      dataDir: string
      loadAverage: number
      shapes: QueryShapeResult[]
      /** Engine CPU per event inserted through events_ingest, with and without the rollup views (medians). */
      upkeep?: {
        events: number
        withUs: number
        withoutUs: number
        share: number
        /** The views on `sessions`, on inserts into it: engine CPU per insert block with and without them (medians). */
        sessions?: { blockSize: number; withMs: number; withoutMs: number }
      }
    }

export function queryCacheDir(seed: number, label: string): string {
  const root =
    process.env.SLUICE_BENCH_CACHE_DIR ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sluice-bench')
  return join(root, `query-${label}-seed${seed}`)
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] ?? NaN
}

/**
 * Query API: six query shapes over a generated data set in chdb, each through the Query API's path
 * (parameters parsed, compiled, run under its caps, rows keyed) and as the SQL an analyst would
 * write on the raw tables, alternately, answers compared; then the rollups' insert upkeep. The
 * engine runs in child processes (query-engine.ts): chdb binds one data directory per process.
 */
export async function queryScenario(options: {
  seed: number
  quick: boolean
  progress: Progress
}): Promise<QueryResult> {
  const set = options.quick ? QUERY_SETS.quick : QUERY_SETS.full
  const dataDir = queryCacheDir(options.seed, set.label)
  const r = await runEngineChild<{
    reused: boolean
    generationMs: number
    rows: Record<string, number>
    shapes: ShapeOutcome[]
    loadAverage: number
  }>({
    script: './query-engine.ts',
    args: [
      'shapes',
      dataDir,
      options.seed,
      set.apps,
      set.installs,
      set.sessions,
      set.events,
      set.runs,
      set.threshold,
    ],
    label: `query (${set.label})`,
    what: 'query engine',
    progress: options.progress,
  })
  const upkeepEvents = options.quick ? UPKEEP_EVENTS.quick : UPKEEP_EVENTS.full
  const u = await runEngineChild<{
    events: number
    withViews: { cpuMs: number }[]
    withoutViews: { cpuMs: number }[]
    sessions?: { blocks: number; blockSize: number; with: { cpuMs: number }[]; without: { cpuMs: number }[] }
  }>({
    script: './query-engine.ts',
    args: ['upkeep', `${dataDir}-upkeep`, options.seed, upkeepEvents],
    label: 'query rollup upkeep',
    what: 'query engine',
    progress: options.progress,
  })
  const withUs = (median(u.withViews.map((x) => x.cpuMs)) * 1000) / u.events
  const withoutUs = (median(u.withoutViews.map((x) => x.cpuMs)) * 1000) / u.events
  const perBlock = (runs: { cpuMs: number }[], blocks: number) => median(runs.map((x) => x.cpuMs)) / blocks
  const sessions =
    u.sessions && u.sessions.with.length > 0
      ? {
          blockSize: u.sessions.blockSize,
          withMs: perBlock(u.sessions.with, u.sessions.blocks),
          withoutMs: perBlock(u.sessions.without, u.sessions.blocks),
        }
      : undefined
  return {
    name: 'query',
    set: set.label,
    rows: r.rows,
    reused: r.reused,
    generationMs: r.generationMs,
    dataDir,
    loadAverage: r.loadAverage,
    shapes: r.shapes.map((s) => {
      const apiMs = summarize(s.apiMs)
      const handMs = summarize(s.handMs)
      return {
        name: s.name,
        source: s.source,
        estimated: s.estimated,
        rows: s.rows,
        equal: s.equal,
        maxEstimateError: s.maxEstimateError,
        apiMs,
        handMs,
        apiCpuMs: summarize(s.apiCpuMs),
        handCpuMs: summarize(s.handCpuMs),
        ratio: (handMs.p50 ?? NaN) / (apiMs.p50 ?? NaN),
      }
    }),
    upkeep: {
      events: u.events,
      withUs,
      withoutUs,
      share: (withUs - withoutUs) / withoutUs,
      ...(sessions && { sessions }),
    },
  }
}

export const QUERY_TARGETS = {
  ratio: { op: '>=', value: 5 },
  p99Ms: { op: '<=', value: 300 },
  upkeep: { op: '<=', value: 10 },
} as const

const SHAPE_NAMES = [
  'users_by_day',
  'occurrences_by_event',
  'sessions_by_week',
  'attribute_not_in',
  'in_groups',
  'metric_condition',
]

/**
 * The figures, named with the data set (`query_20m_…` full, `query_1m_…` quick): per shape its
 * p50, p99 and ratio (hand-written p50 ÷ Query API p50; met only when the answers agree), the count
 * of shapes whose answers differ, and the rollup upkeep. Targets are the full set's.
 */
export function queryFigures(
  r: QueryResult | undefined,
  skipped: string,
  quick: boolean,
  run: RunMeasures = {},
): Figure[] {
  const label = quick ? QUERY_SETS.quick.label : QUERY_SETS.full.label
  const name = (what: string) => `query_${label}_${what}`
  if (!r || r.skipped !== undefined) {
    const why = r?.skipped ?? skipped
    return [
      ...SHAPE_NAMES.flatMap((s) => [
        { name: name(`${s}_p50_ms`), unit: 'ms', skipped: why },
        { name: name(`${s}_p99_ms`), unit: 'ms', skipped: why },
        { name: name(`${s}_ratio`), unit: '', skipped: why },
      ]),
      { name: name('mismatches'), unit: '', skipped: why },
      { name: name('rollup_upkeep_pct'), unit: '%', skipped: why },
      { name: name('rollup_upkeep_e2e_pct'), unit: '%', skipped: why },
    ]
  }
  const figures: Figure[] = []
  for (const s of r.shapes) {
    const from = `${s.source}${s.estimated.length > 0 ? `, estimated ${s.estimated.join(', ')} (max error ${round(s.maxEstimateError * 100, 2)} %)` : ''}`
    const cpu = `engine CPU p50 ${Math.round(s.apiCpuMs.p50 ?? NaN)} ms (hand-written ${Math.round(s.handCpuMs.p50 ?? NaN)} ms)`
    const p50 = s.apiMs.p50
    const p99 = s.apiMs.p99
    figures.push(
      {
        name: name(`${s.name}_p50_ms`),
        unit: 'ms',
        ...(p50 === undefined ? { skipped: 'no run' } : { value: Math.round(p50) }),
        detail: `from ${from}; ${s.rows} rows; ${cpu}`,
      },
      {
        name: name(`${s.name}_p99_ms`),
        unit: 'ms',
        ...(p99 === undefined ? { skipped: 'no run' } : { value: Math.round(p99) }),
        ...(quick
          ? { detail: 'the 300 ms target is the 20M set’s' }
          : { target: QUERY_TARGETS.p99Ms, met: p99 !== undefined && p99 <= QUERY_TARGETS.p99Ms.value }),
      },
      {
        name: name(`${s.name}_ratio`),
        unit: '',
        value: round(s.ratio, 2),
        ...(quick
          ? {
              detail: `hand-written p50 ${Math.round(s.handMs.p50 ?? NaN)} ms ÷ Query API p50; the 5× target is the 20M set’s`,
            }
          : {
              target: QUERY_TARGETS.ratio,
              met: Number.isFinite(s.ratio) && s.ratio >= QUERY_TARGETS.ratio.value && s.equal,
              detail: `hand-written p50 ${Math.round(s.handMs.p50 ?? NaN)} ms ÷ Query API p50`,
            }),
      },
    )
  }
  const differ = r.shapes.filter((s) => !s.equal).map((s) => s.name)
  figures.push({
    name: name('mismatches'),
    unit: '',
    value: differ.length,
    target: { op: '<=', value: 0 },
    met: differ.length === 0,
    detail:
      differ.length === 0 ? 'every shape answers as the hand-written SQL' : `DIFFER: ${differ.join(', ')}`,
  })
  if (r.upkeep) {
    const u = r.upkeep
    const extraUs = u.withUs - u.withoutUs
    const sessionsView = u.sessions
      ? `; not in either figure, the views on sessions, on inserts into it: ${round(u.sessions.withMs, 1)} ms of engine CPU per block of ${u.sessions.blockSize.toLocaleString('en-US')} with them, ${round(u.sessions.withoutMs, 1)} ms without`
      : ''
    figures.push({
      name: name('rollup_upkeep_pct'),
      unit: '%',
      value: round(u.share * 100, 1),
      detail:
        `the views' share of the insert's own engine CPU: ${round(u.withUs, 2)} us per event through events_ingest with the rollup views, ` +
        `${round(u.withoutUs, 2)} us without (${u.events.toLocaleString('en-US')} events in blocks of 50,000)${sessionsView}`,
    })
    // The issue's budget: upkeep ≤ 10 % of e2e_ratio. Ingestion is CPU-bound, so the share of an
    // event's end-to-end CPU that the views take is the share of the rate they cost.
    const e2eUs = run.cpuUsPerEvent
    figures.push(
      e2eUs === undefined || e2eUs <= 0
        ? {
            name: name('rollup_upkeep_e2e_pct'),
            unit: '%',
            skipped: 'no end-to-end CPU per event in this run',
          }
        : {
            name: name('rollup_upkeep_e2e_pct'),
            unit: '%',
            value: round((extraUs / e2eUs) * 100, 1),
            target: QUERY_TARGETS.upkeep,
            met: (extraUs / e2eUs) * 100 <= QUERY_TARGETS.upkeep.value,
            detail: `the views' ${round(extraUs, 2)} us of engine CPU per event against cpu_us_per_event ${round(e2eUs, 1)} us`,
          },
    )
  }
  return figures
}

/** The bench step (run before the baselines, on a machine the bench keeps otherwise quiet). */
export async function runQuery(run: BenchRun): Promise<void> {
  const quick = run.options.profile.name === 'quick'
  if (run.options.distributed) {
    run.results.scenarios.query = { name: 'query', skipped: 'measured on the embedded engine (chdb) only' }
    return
  }
  // A first run generates the data set (a couple of minutes quick, longer full); later runs reuse it.
  if (!run.fits('query', quick ? 60_000 : 600_000)) return
  const r = await run.step('query', () =>
    queryScenario({ seed: run.options.seed, quick, progress: run.progress }),
  )
  if (!r) return
  run.results.scenarios.query = r
  if (r.skipped === undefined)
    for (const s of r.shapes)
      run.log(
        `    ${s.name} (${s.source}): p50 ${Math.round(s.apiMs.p50 ?? NaN)} ms, p99 ${Math.round(s.apiMs.p99 ?? NaN)} ms; ` +
          `hand-written p50 ${Math.round(s.handMs.p50 ?? NaN)} ms; ratio ${round(s.ratio, 2)}${s.equal ? '' : '; ANSWERS DIFFER'}`,
      )
}

/** The scenario's line in report.md. */
export function queryLine(r: QueryResult): string {
  if (r.skipped !== undefined) return `- **query**: skipped (${r.skipped}).`
  const shapes = r.shapes
    .map(
      (s) =>
        `${s.name} (${s.source}) p50 ${Math.round(s.apiMs.p50 ?? NaN)} / p99 ${Math.round(s.apiMs.p99 ?? NaN)} ms vs ` +
        `hand-written ${Math.round(s.handMs.p50 ?? NaN)} ms, ×${round(s.ratio, 2)}${s.equal ? '' : ' DIFFER'}`,
    )
    .join('; ')
  const upkeep = r.upkeep
    ? `; rollup upkeep ${round(r.upkeep.share * 100, 1)} % of the insert's engine CPU`
    : ''
  return (
    `- **query** (${r.set}: ${JSON.stringify(r.rows)}; load average ${r.loadAverage.toFixed(1)}): ${shapes}${upkeep}; ` +
    `data ${r.reused ? 'reused' : `generated in ${Math.round(r.generationMs / 1000)} s`} (${r.dataDir}).`
  )
}

/** How the report reads this scenario's result (bench/figures.ts). */
export const queryReporter: ScenarioReporter<QueryResult> = {
  name: 'query',
  figures: queryFigures,
  summary: queryLine,
}
