import { runEngineChild } from '../engine-child.ts'
import { homedir } from 'node:os'
import { join } from 'node:path'
import type { BenchRun } from '../bench-run.ts'
import type { Figure, ScenarioReporter } from '../figures.ts'
import { round } from '../stats.ts'

/** The data sets: the issue's 1M rows, and a fifth of it for --quick. */
export const EXPORT_SETS = {
  full: { label: '1m', rows: 1_000_000, runs: 2 },
  quick: { label: '200k', rows: 200_000, runs: 1 },
} as const

interface Side {
  ms: number
  rows: number
  rssGrowthMb: number
  jsGrowthMb?: number
  engineGrowthMb?: number
  bytes?: number
}

export type ExportBenchResult =
  | { name: 'exports'; skipped: string }
  | {
      name: 'exports'
      skipped?: undefined
      set: string
      rows: number
      reused: boolean
      log: { sluice: Side; baseline: Side }
      audience: { sluice: Side; baseline: Side }
    }

export const EXPORT_TARGETS = {
  ratio: { op: '>=', value: 0.8 },
  rssGrowthMb: { op: '<=', value: 100 },
} as const

/**
 * Exports: an hourly log export and an audience export of `rows` rows each, written by Sluice's
 * export writer (the worker stage, in a child process over Sluice's schema in chdb: the engine
 * binds one data directory per process), against the engine's own `SELECT … FORMAT JSONEachRow`
 * of the same rows through gzip. The data set is kept between runs, like segmentation's.
 */
async function exportBench(run: BenchRun, set: (typeof EXPORT_SETS)[keyof typeof EXPORT_SETS]) {
  const root =
    process.env.SLUICE_BENCH_CACHE_DIR ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sluice-bench')
  const dataDir = join(root, `exports-${set.label}`)
  const r = await runEngineChild<Omit<Extract<ExportBenchResult, { set: string }>, 'name' | 'set'>>({
    script: './exports-engine.ts',
    args: [dataDir, set.rows, set.runs],
    label: `exports (${set.label})`,
    what: 'export engine',
    progress: run.progress,
    // As `sluice start` runs the engine (bin/sluice.js): freed pages go back within a second.
    env: { ...process.env, JE_MALLOC_CONF: process.env.JE_MALLOC_CONF ?? 'dirty_decay_ms:1000' },
  })
  return { name: 'exports' as const, set: set.label, ...r }
}

/** The bench step (embedded engine only: the baseline is the same engine's own output). */
export async function runExportBench(run: BenchRun): Promise<void> {
  const quick = run.options.profile.name === 'quick'
  if (run.options.distributed) {
    run.results.scenarios.exports = {
      name: 'exports',
      skipped: 'measured on the embedded engine (chdb) only',
    }
    return
  }
  const set = quick ? EXPORT_SETS.quick : EXPORT_SETS.full
  // A first run generates the data (about 15 s quick, a minute full); later runs reuse it.
  if (!run.fits('exports', quick ? 40_000 : 240_000)) return
  const r = await run.step('exports', () => exportBench(run, set))
  if (!r) return
  run.results.scenarios.exports = r
  const rate = (s: Side) => Math.round(s.rows / (s.ms / 1000))
  run.log(
    `    ${r.set}: log ${rate(r.log.sluice)} rows/s (baseline ${rate(r.log.baseline)}), RSS +${r.log.sluice.rssGrowthMb} MB; ` +
      `audience ${rate(r.audience.sluice)} rows/s (baseline ${rate(r.audience.baseline)}), RSS +${r.audience.sluice.rssGrowthMb} MB; ` +
      `data ${r.reused ? 'reused' : 'generated'}`,
  )
}

/** Figures, named with the data set's size (`export_log_1m_…`, `export_log_200k_…` in --quick). */
export function exportFigures(r: ExportBenchResult | undefined, skipped: string, quick: boolean): Figure[] {
  const label = quick ? EXPORT_SETS.quick.label : EXPORT_SETS.full.label
  const kinds = ['log', 'audience'] as const
  if (!r || r.skipped !== undefined) {
    const why = r?.skipped ?? skipped
    return kinds.flatMap((kind) => [
      { name: `export_${kind}_${label}_rows_per_s`, unit: 'rows/s', skipped: why },
      { name: `export_${kind}_${label}_ratio`, unit: '', skipped: why },
      { name: `export_${kind}_${label}_rss_growth_mb`, unit: 'MB', skipped: why },
    ])
  }
  return kinds.flatMap((kind): Figure[] => {
    const { sluice, baseline } = r[kind]
    const ours = sluice.rows / (sluice.ms / 1000)
    const theirs = baseline.rows / (baseline.ms / 1000)
    const ratio = ours / theirs
    const rowsOk = sluice.rows === r.rows
    return [
      {
        name: `export_${kind}_${r.set}_rows_per_s`,
        unit: 'rows/s',
        value: Math.round(ours),
        detail: `${sluice.rows.toLocaleString('en-US')} rows in ${(sluice.ms / 1000).toFixed(1)} s, ${((sluice.bytes ?? 0) / 1048576).toFixed(0)} MB gzip${rowsOk ? '' : ` (EXPECTED ${r.rows})`}`,
      },
      {
        name: `export_${kind}_${r.set}_ratio`,
        unit: '',
        value: round(ratio, 2),
        target: EXPORT_TARGETS.ratio,
        met: Number.isFinite(ratio) && ratio >= EXPORT_TARGETS.ratio.value && rowsOk,
        detail: `Sluice's rows/s ÷ the engine's own JSONEachRow through gzip (${Math.round(theirs)} rows/s)`,
      },
      {
        name: `export_${kind}_${r.set}_rss_growth_mb`,
        unit: 'MB',
        value: sluice.rssGrowthMb,
        target: EXPORT_TARGETS.rssGrowthMb,
        met: sluice.rssGrowthMb <= EXPORT_TARGETS.rssGrowthMb.value,
        detail:
          `whole process, the embedded engine included (its tracked memory +${sluice.engineGrowthMb ?? NaN} MB); ` +
          `Node's heap and buffers +${sluice.jsGrowthMb ?? NaN} MB (uncollected garbage included); ` +
          `the baseline, measured alike, grew the process by ${baseline.rssGrowthMb} MB (engine +${baseline.engineGrowthMb ?? NaN} MB)`,
      },
    ]
  })
}

/** The scenario's line in report.md. */
export function exportLine(r: ExportBenchResult): string {
  if (r.skipped !== undefined) return `- **exports**: skipped (${r.skipped}).`
  const side = (s: Side) =>
    `${Math.round(s.rows / (s.ms / 1000))} rows/s (${s.rows} rows in ${(s.ms / 1000).toFixed(1)} s, RSS +${s.rssGrowthMb} MB, engine +${s.engineGrowthMb ?? NaN} MB)`
  return (
    `- **exports** (${r.set}): log file ${side(r.log.sluice)} against the engine's JSONEachRow + gzip ${side(r.log.baseline)}; ` +
    `audience file ${side(r.audience.sluice)} against ${side(r.audience.baseline)}.`
  )
}

/** How the report reads this scenario's result (bench/figures.ts). */
export const exportReporter: ScenarioReporter<ExportBenchResult> = {
  name: 'exports',
  figures: exportFigures,
  summary: exportLine,
}
