/**
 * Where an upload's freshness goes: its time from the 202 to its receipt seen `done`, split at the
 * moments the pipeline records on the receipt row (migration 030). Pure arithmetic over epoch
 * milliseconds; both clocks are the machine's (the bench and Sluice run on it).
 */
import { summarize, type LatencySummary } from './stats.ts'

/** One sampled upload: the bench's own moments (202, `done` seen) around the pipeline's. */
export interface StageStamps {
  /** The 202 reached the bench. */
  accepted: number
  /** The splitter handed the body to the CPU pool (consumed_at). */
  consumed: number
  /** The pool gave its events back (parsed_at). */
  parsed: number
  /** Its group was attributed, after the app and device look-ups (processed_at). */
  processed: number
  /** Its group's write returned: events inserted (embedded) or on the events topic (written_at). */
  written: number
  /** Its group's receipts insert began (recorded_at; before `05a0a5c`, its batch's). */
  recorded: number
  /** The bench's poll found it done. */
  seen: number
}

/** The stages, in the order an upload goes through them, each from one moment to the next. */
export const STAGES = ['log', 'parse', 'group', 'write', 'batch', 'receipt'] as const
export type Stage = (typeof STAGES)[number]

/** What each stage holds, for the report. */
export const STAGE_MEANING: Record<Stage, string> = {
  log: '202 → consumed: on the log until the splitter takes it (behind the batch being written)',
  parse: 'consumed → parsed: the CPU pool (its queue, then the parse)',
  group: 'parsed → attributed: the rest of its group parsed, the app and device look-ups',
  write: "attributed → written: attribution, the event store's turn, the dedupe look-up, the insert",
  batch:
    "written → recorded: its group's rejected lines' insert, after an earlier group's record under way (before `05a0a5c`, its batch's later groups too)",
  receipt: 'recorded → seen done: the receipt insert, then the poll that finds it',
}

const BOUNDS: Record<Stage, [keyof StageStamps, keyof StageStamps]> = {
  log: ['accepted', 'consumed'],
  parse: ['consumed', 'parsed'],
  group: ['parsed', 'processed'],
  write: ['processed', 'written'],
  batch: ['written', 'recorded'],
  receipt: ['recorded', 'seen'],
}

/**
 * Each stage's milliseconds; they add up to the freshness (seen − accepted). A stage can be
 * slightly negative: the pool may take a body up before its 202 has travelled back to the bench.
 */
export function stageDurations(s: StageStamps): Record<Stage, number> {
  const out = {} as Record<Stage, number>
  for (const stage of STAGES) {
    const [from, to] = BOUNDS[stage]
    out[stage] = s[to] - s[from]
  }
  return out
}

export interface StageBreakdown {
  /** Samples broken down (those whose receipt row carried every moment). */
  samples: number
  /** 202 → seen done, over the same samples. */
  totalMs: LatencySummary
  /** Each stage's distribution on its own. */
  stages: Record<Stage, LatencySummary>
  /**
   * Each stage's mean over the slowest 10 % of samples (at least one), against its mean over all:
   * the stages that make the tail are the ones that grow there.
   */
  tailMeanMs: Record<Stage, number>
  meanMs: Record<Stage, number>
  /** The slowest samples, each split by stage (at most 5). */
  slowest: { totalMs: number; stages: Record<Stage, number> }[]
}

export function breakDown(samples: readonly StageStamps[]): StageBreakdown {
  const rows = samples.map((s) => ({ total: s.seen - s.accepted, stages: stageDurations(s) }))
  const byTotal = [...rows].sort((a, b) => b.total - a.total)
  const tailCount = Math.max(1, Math.ceil(rows.length / 10))
  const tail = byTotal.slice(0, tailCount)
  const stages = {} as Record<Stage, LatencySummary>
  const meanMs = {} as Record<Stage, number>
  const tailMeanMs = {} as Record<Stage, number>
  for (const stage of STAGES) {
    stages[stage] = summarize(rows.map((r) => r.stages[stage]))
    meanMs[stage] = mean(rows.map((r) => r.stages[stage]))
    tailMeanMs[stage] = mean(tail.map((r) => r.stages[stage]))
  }
  return {
    samples: rows.length,
    totalMs: summarize(rows.map((r) => r.total)),
    stages,
    tailMeanMs,
    meanMs,
    slowest: byTotal.slice(0, 5).map((r) => ({ totalMs: r.total, stages: r.stages })),
  }
}

const mean = (values: readonly number[]) =>
  values.length === 0 ? 0 : values.reduce((sum, v) => sum + v, 0) / values.length

/**
 * `log 12/40, parse 3/9, …`: each stage's p50/p99 in ms (the report's one-line form), and the
 * stage that grows most from all samples to the slowest 10 %.
 */
export function stagesLine(b: StageBreakdown): string {
  const parts = STAGES.map((stage) => `${stage} ${fmt(b.stages[stage].p50)}/${fmt(b.stages[stage].p99)}`)
  return `p50/p99 ms by stage: ${parts.join(', ')}; the slowest 10 % spend most more in ${tailStage(b)}`
}

/** The stage whose mean grows most from all samples to the slowest 10 %, with both means. */
export function tailStage(b: StageBreakdown): string {
  let worst: Stage = STAGES[0]
  for (const stage of STAGES)
    if (b.tailMeanMs[stage] - b.meanMs[stage] > b.tailMeanMs[worst] - b.meanMs[worst]) worst = stage
  return `${worst} (${fmt(b.meanMs[worst])} → ${fmt(b.tailMeanMs[worst])} ms)`
}

const fmt = (v: number | undefined) => (v === undefined ? 'n/a' : String(Math.round(v)))
