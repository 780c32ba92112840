import { DateTime } from 'luxon'
import type { Dimension, SimpleMetric } from './query-fields.ts'
import type { Condition, ParsedQuery } from './parse-query.ts'

/**
 * Whether a rollup answers a query, which one, and which of its metrics are then estimates. Pure.
 * docs/query-api.md ("Rollups and estimates") states the rules, tried in this order:
 * - `query_session_rollup` (migration 031): every metric is `sessions` or `average_session_length`,
 *   every dimension (asked or in a condition) a time unit, the zone has whole-hour offsets. Exact.
 * - `query_rollup` (027): every metric is one of ROLLUP_METRICS (sums and uniq states kept per row),
 *   every dimension a time unit or the event name (birth_day, new_device and new_users need each
 *   user's first appearance; attributes and device columns are not kept), the zone has whole-hour
 *   offsets (the rows are UTC hours, so a local day is a sum of whole rows only then).
 * - `query_attribute_rollup` (031): one event attribute, whose absent value a condition excludes
 *   (the rollup has no row for events without it), every other dimension `day`, `week`, `month` or
 *   the event name, every metric one of ATTRIBUTE_ROLLUP_METRICS, and the zone UTC all year (its
 *   rows are UTC days).
 */

/** The metrics query_rollup keeps, and whether each is an estimate when read from it. */
export const ROLLUP_METRICS: Readonly<Partial<Record<SimpleMetric, { estimated: boolean }>>> = {
  occurrences: { estimated: false },
  ltv: { estimated: false },
  users: { estimated: true },
  sessions: { estimated: true },
  sessions_per_event: { estimated: true },
}

/** The metrics the attribute rollup keeps, and whether each is an estimate when read from it. */
export const ATTRIBUTE_ROLLUP_METRICS: Readonly<Partial<Record<SimpleMetric, { estimated: boolean }>>> = {
  occurrences: { estimated: false },
  ltv: { estimated: false },
  users: { estimated: true },
}

/** The metrics the session rollup answers, exactly. */
const SESSION_ROLLUP_METRICS: ReadonlySet<SimpleMetric> = new Set(['sessions', 'average_session_length'])

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

/** Whether the zone was UTC (offset 0) in every January and July: the attribute rollup's days are UTC days. */
export const utcZone = (timeZone: string, now: number): boolean =>
  zoneOffsets(timeZone, now).every((offset) => offset === 0)

export type RollupName = 'query_rollup' | 'query_session_rollup' | 'query_attribute_rollup'

export interface RollupPlan {
  rollup: RollupName
  /** Metric names (as requested) whose numbers are estimates. */
  estimated: string[]
  /** query_attribute_rollup: the attribute's key. */
  attribute?: string
}

const timeDimension = (d: Dimension) => d.kind === 'time'
const eventNameDimension = (d: Dimension) => d.kind === 'column' && d.column === 'event_name'

/** Whether an absent value (NULL) passes the condition, as compile-query.ts's conditionSql reads it. */
export function nullPasses(c: Condition): boolean {
  const hasNull = c.operands.some((o) => o === null)
  switch (c.op) {
    case '==':
    case 'in':
      return hasNull
    case '!=':
    case 'not_in':
      return !hasNull
    case 'in_groups':
      return (c.groups ?? []).some(([, members]) => members.some((m) => m === null))
    default:
      return false
  }
}

/** The plan of a query a rollup answers, or undefined when it needs the raw tables. */
export function rollupPlan(q: ParsedQuery, timeZone: string, now: number): RollupPlan | undefined {
  const simple: SimpleMetric[] = []
  for (const m of q.metrics) {
    if (m.metric.kind !== 'simple') return undefined
    simple.push(m.metric.metric)
  }
  const dimensions = [
    ...q.dimensions.map((d) => d.dimension),
    ...q.conditions.flatMap((c) => (c.target.kind === 'dimension' ? [c.target.dimension] : [])),
  ]
  const estimatedOf = (kept: Readonly<Partial<Record<SimpleMetric, { estimated: boolean }>>>) =>
    q.metrics.filter((m) => m.metric.kind === 'simple' && kept[m.metric.metric]?.estimated).map((m) => m.name)

  if (simple.every((m) => SESSION_ROLLUP_METRICS.has(m)) && dimensions.every(timeDimension))
    return wholeHourZone(timeZone, now) ? { rollup: 'query_session_rollup', estimated: [] } : undefined

  if (
    simple.every((m) => ROLLUP_METRICS[m]) &&
    dimensions.every((d) => timeDimension(d) || eventNameDimension(d))
  )
    return wholeHourZone(timeZone, now)
      ? { rollup: 'query_rollup', estimated: estimatedOf(ROLLUP_METRICS) }
      : undefined

  const keys = new Set(dimensions.flatMap((d) => (d.kind === 'attribute' ? [d.key] : [])))
  const [attribute] = keys
  if (
    attribute !== undefined &&
    keys.size === 1 &&
    simple.every((m) => ATTRIBUTE_ROLLUP_METRICS[m]) &&
    dimensions.every(
      (d) => d.kind === 'attribute' || eventNameDimension(d) || (d.kind === 'time' && d.unit !== 'hour'),
    ) &&
    q.conditions.some(
      (c) =>
        c.target.kind === 'dimension' &&
        c.target.dimension.kind === 'attribute' &&
        c.target.dimension.key === attribute &&
        !nullPasses(c),
    ) &&
    utcZone(timeZone, now)
  )
    return { rollup: 'query_attribute_rollup', estimated: estimatedOf(ATTRIBUTE_ROLLUP_METRICS), attribute }
  return undefined
}

/**
 * How far an estimated metric may be from the exact number (docs/query-api.md, "Rollups and
 * estimates"): `uniq` keeps every hash up to 65,536 distinct values (exact, save a 32-bit hash
 * collision), then a sample; its error beyond is typically under 1 %, and the bound stated is 2 %.
 */
export const ESTIMATE_RELATIVE_BOUND = 0.02

export const withinEstimate = (estimate: number, exact: number) =>
  Math.abs(estimate - exact) <= ESTIMATE_RELATIVE_BOUND * Math.abs(exact)
