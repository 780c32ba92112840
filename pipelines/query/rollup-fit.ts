import { DateTime } from 'luxon'
import type { Dimension, SimpleMetric } from './query-fields.ts'
import type { ParsedQuery } from './parse-query.ts'

/**
 * Whether the rollup (`query_rollup`, migration 027) answers a query, and which of its metrics are
 * then estimates. Pure. docs/query-api.md ("Rollups and estimates") states the rule:
 * - every metric is one of ROLLUP_METRICS (sums and uniq states kept per row of the rollup);
 * - every dimension, asked or in a condition, is a time unit or the event name (birth_day,
 *   new_device and new_users need each user's first appearance; attributes and device columns are
 *   not kept);
 * - the app's time zone has had whole-hour UTC offsets (the rollup's rows are UTC hours, so a
 *   local day is a sum of whole rows only then).
 */

/** The metrics the rollup keeps, and whether each is an estimate when read from it. */
export const ROLLUP_METRICS: Readonly<Partial<Record<SimpleMetric, { estimated: boolean }>>> = {
  occurrences: { estimated: false },
  ltv: { estimated: false },
  users: { estimated: true },
  sessions: { estimated: true },
  sessions_per_event: { estimated: true },
}

const rollupDimension = (d: Dimension) =>
  d.kind === 'time' || (d.kind === 'column' && d.column === 'event_name')

/** First year whose offsets are checked: events stamped earlier are not expected. */
const FIRST_YEAR = 2000

/**
 * The zone's UTC offsets (minutes) in every January and July (both sides of daylight saving) from
 * FIRST_YEAR to the year after `now`'s, computed once per zone and year: luxon resolves each date
 * through Intl, which costs more than the rest of a query's compilation.
 */
const offsetsSeen = new Map<string, readonly number[]>()
function zoneOffsets(timeZone: string, now: number): readonly number[] {
  const last = DateTime.fromMillis(now, { zone: 'UTC' }).year + 1
  const key = `${timeZone}\u0000${last}`
  let offsets = offsetsSeen.get(key)
  if (!offsets) {
    const found = new Set<number>()
    for (let year = FIRST_YEAR; year <= last; year++)
      for (const month of [1, 7])
        found.add(DateTime.fromObject({ year, month, day: 15 }, { zone: timeZone }).offset)
    offsets = [...found]
    // Zones are few (IANA names); a stray flood of invalid names stays bounded.
    if (offsetsSeen.size > 1000) offsetsSeen.clear()
    offsetsSeen.set(key, offsets)
  }
  return offsets
}

/**
 * Whether the zone's UTC offset was a whole number of hours in every January and July from
 * FIRST_YEAR to the year after `now`. Zones such as Asia/Kolkata (+5:30) or Australia/Lord_Howe (a
 * 30-minute shift) are answered from the raw tables.
 */
export const wholeHourZone = (timeZone: string, now: number): boolean =>
  zoneOffsets(timeZone, now).every((offset) => offset % 60 === 0)

/**
 * The zone names the engine reads as UTC itself (no offset ever): a local day there is a UTC day,
 * which the rollup's daily projection keeps (migration 036). Zones that merely sit at offset 0 in
 * some seasons (Europe/London) or some years (Africa/Casablanca) are not among them.
 */
const UTC_ZONES = new Set(
  ['UTC', 'UCT', 'GMT', 'GMT0', 'GMT+0', 'GMT-0', 'Greenwich', 'Universal', 'Zulu'].flatMap((z) => [
    z,
    `Etc/${z}`,
  ]),
)

export interface RollupPlan {
  /** Metric names (as requested) whose numbers are estimates. */
  estimated: string[]
  /**
   * Whether the query groups and filters by UTC days or coarser (no hour, and the zone is UTC): its
   * rows are then read as UTC days, which the rollup's daily projection answers with far fewer
   * states to merge than its hours (docs/query-api.md, "Rollups and estimates").
   */
  utcDays: boolean
}

/** The plan of a query the rollup answers, or undefined when it needs the raw tables. */
export function rollupPlan(q: ParsedQuery, timeZone: string, now: number): RollupPlan | undefined {
  const estimated: string[] = []
  for (const m of q.metrics) {
    if (m.metric.kind !== 'simple') return undefined
    const kept = ROLLUP_METRICS[m.metric.metric]
    if (!kept) return undefined
    if (kept.estimated) estimated.push(m.name)
  }
  const dimensions = [
    ...q.dimensions.map((d) => d.dimension),
    ...q.conditions.flatMap((c) => (c.target.kind === 'dimension' ? [c.target.dimension] : [])),
  ]
  if (!dimensions.every(rollupDimension)) return undefined
  if (!wholeHourZone(timeZone, now)) return undefined
  const utcDays = UTC_ZONES.has(timeZone) && !dimensions.some((d) => d.kind === 'time' && d.unit === 'hour')
  return { estimated, utcDays }
}

/**
 * How far an estimated metric may be from the exact number (docs/query-api.md, "Rollups and
 * estimates"): `uniq` keeps every hash up to 65,536 distinct values (exact, save a 32-bit hash
 * collision), then a sample; its error beyond is typically under 1 %, and the bound stated is 2 %.
 */
export const ESTIMATE_RELATIVE_BOUND = 0.02

export const withinEstimate = (estimate: number, exact: number) =>
  Math.abs(estimate - exact) <= ESTIMATE_RELATIVE_BOUND * Math.abs(exact)

/** The metrics the session rollup (migration 038) answers, exactly. */
export const SESSION_ROLLUP_METRICS: readonly SimpleMetric[] = ['sessions', 'average_session_length']

/**
 * Whether the session rollup (`query_session_hours` and `query_session_lengths`, migration 038)
 * answers a query: every metric is `sessions` or `average_session_length` (at least one of them
 * the latter: `sessions` alone `query_rollup` answers), every dimension, asked or in a condition,
 * a time unit, and the zone a whole-hour one. Its answers are exact (docs/query-api.md, "Sessions
 * and their lengths").
 */
export function sessionRollupFits(q: ParsedQuery, timeZone: string, now: number): boolean {
  const simple = q.metrics.map((m) => (m.metric.kind === 'simple' ? m.metric.metric : undefined))
  if (!simple.every((m) => m !== undefined && SESSION_ROLLUP_METRICS.includes(m))) return false
  if (!simple.includes('average_session_length')) return false
  const dimensions = [
    ...q.dimensions.map((d) => d.dimension),
    ...q.conditions.flatMap((c) => (c.target.kind === 'dimension' ? [c.target.dimension] : [])),
  ]
  return dimensions.every((d) => d.kind === 'time') && wholeHourZone(timeZone, now)
}
