import type { Figure, ScenarioReporter } from '../figures.ts'
import { meets } from '../figures.ts'
import { STAGE_MEANING, STAGES, stagesLine, type StageBreakdown } from '../freshness-stages.ts'
import type { LatencySummary } from '../stats.ts'
import type { FreshnessResult } from './freshness.ts'

export const FRESHNESS_TARGETS = { p99Ms: { op: '<=', value: 1000 } } as const

/** freshness_p50_ms and freshness_p99_ms (the target), with the spread and the stages in the detail. */
export function freshnessFigures(f: FreshnessResult | undefined, skipped: string): Figure[] {
  const p50 = f?.freshnessMs.p50
  const p99 = f?.freshnessMs.p99
  if (!f || p50 === undefined || p99 === undefined)
    return [
      { name: 'freshness_p50_ms', unit: 'ms', skipped },
      { name: 'freshness_p99_ms', unit: 'ms', target: FRESHNESS_TARGETS.p99Ms, met: false, skipped },
    ]
  const samples = `${f.samples} samples at ${Math.round((f.loadShare ?? 0.5) * 100)} % of the max sustained rate${f.timedOut > 0 ? `, ${f.timedOut} timed out` : ''}`
  const spread = `; p90 ${fmt(f.freshnessMs.p90)}, max ${fmt(f.freshnessMs.max)} ms`
  const stages = f.stages && f.stages.samples > 0 ? `; ${stagesLine(f.stages)}` : ''
  return [
    { name: 'freshness_p50_ms', unit: 'ms', value: Math.round(p50), detail: samples },
    {
      name: 'freshness_p99_ms',
      unit: 'ms',
      target: FRESHNESS_TARGETS.p99Ms,
      met: meets(p99, FRESHNESS_TARGETS.p99Ms) && f.timedOut === 0,
      value: Math.round(p99),
      detail: samples + spread + stages,
    },
  ]
}

/** The scenario's paragraph in report.md, and its table by stage. */
export function freshnessLine(f: FreshnessResult): string {
  const line =
    `- **freshness**: ${f.targetBodiesPerSecond.toFixed(1)} bodies/s (${fmt(f.targetEventsPerSecond)} ev/s asked, ${Math.round((f.loadShare ?? 0.5) * 100)} % of the max sustained rate; ${fmt(f.acceptedEventsPerSecond)} ev/s accepted) for ${fmt(f.sendMs / 1000, 1)} s; ` +
    `${f.samples} sampled uploads (${f.polls} receipt polls answered in ${lat(f.receiptReadMs)}), 202 → receipt done p50/p90/p99 ${lat(f.freshnessMs)}, max ${fmt(f.freshnessMs.max)} ms${f.timedOut ? `, ${f.timedOut} timed out` : ''}` +
    `${f.warmUp ? `; before them, ${fmt(f.warmUp.ms / 1000, 1)} s of the same load from idle, not counted (${f.warmUp.freshnessMs.count} sampled, max ${fmt(f.warmUp.freshnessMs.max)} ms)` : ''}` +
    `; answers ${Object.entries(f.statuses)
      .map(([k, v]) => `${k}×${v}`)
      .join(' ')}${f.skipped ? `, ${f.skipped} sends skipped (client saturated)` : ''}` +
    `${f.unfollowed ? `, ${f.unfollowed} accepted while 2,000 were followed, not sampled` : ''}` +
    `; CPU sluice ${f.cpu.sluice.toFixed(2)}, bench ${f.cpu.bench.toFixed(2)}, other ${f.cpu.other.toFixed(2)}.`
  return f.stages && f.stages.samples > 0 ? [line, '', ...stageTable(f.stages)].join('\n') : line
}

/** Freshness split by stage: each stage's spread, its mean over all samples and over the slowest 10 %. */
export function stageTable(b: StageBreakdown): string[] {
  const rows = [
    `Freshness by stage (${b.samples} samples; ms):`,
    '',
    '| stage | p50 | p90 | p99 | max | mean | mean of the slowest 10 % |',
    '|---|---|---|---|---|---|---|',
  ]
  for (const stage of STAGES) {
    const s = b.stages[stage]
    rows.push(
      `| ${STAGE_MEANING[stage]} | ${fmt(s.p50)} | ${fmt(s.p90)} | ${fmt(s.p99)} | ${fmt(s.max)} | ${fmt(b.meanMs[stage])} | ${fmt(b.tailMeanMs[stage])} |`,
    )
  }
  const t = b.totalMs
  rows.push(
    `| 202 → seen done (all) | ${fmt(t.p50)} | ${fmt(t.p90)} | ${fmt(t.p99)} | ${fmt(t.max)} | ${fmt(t.mean)} | |`,
  )
  rows.push(
    '',
    `The slowest: ${b.slowest.map((x) => `${fmt(x.totalMs)} ms (${STAGES.map((st) => `${st} ${fmt(x.stages[st])}`).join(', ')})`).join('; ')}.`,
  )
  return rows
}

/** How the report reads this scenario's result (bench/figures.ts). */
export const freshnessReporter: ScenarioReporter<FreshnessResult> = {
  name: 'freshness',
  figures: freshnessFigures,
  summary: freshnessLine,
}

const fmt = (v: number | undefined, digits = 0) =>
  v === undefined || !Number.isFinite(v)
    ? 'n/a'
    : v.toLocaleString('en-US', { maximumFractionDigits: digits })
const lat = (s: LatencySummary) =>
  s.count > 0 ? `${fmt(s.p50, 1)} / ${fmt(s.p90, 1)} / ${fmt(s.p99, 1)} ms` : 'n/a'
