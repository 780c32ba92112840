import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { compileQuery, type CompiledQuery } from '../../pipelines/query/compile-query.ts'
import {
  evaluateQuery,
  type QueryEventRow,
  type QueryRawLogRow,
  type QuerySessionRow,
} from '../../pipelines/query/evaluate-query.ts'
import { parseQuery } from '../../pipelines/query/parse-query.ts'
import { withinEstimate } from '../../pipelines/query/rollup-fit.ts'
import { resultRows, type ResultRow } from '../../pipelines/query/result-set.ts'
import { engineTime } from '../helpers/audience-data.ts'
import { tempDir } from '../helpers/temp.ts'

// On random events and sessions, the compiled query run in the embedded engine answers the rows
// the in-memory evaluator (written from docs/query-api.md) computes for the same query. Each run
// uses its own app in one shared store. fast-check prints the seed and path of a failure.
// Queries that fit the rollup are answered from it (the events and sessions inserted here fill it
// through its views, as the writers' inserts do): exact metrics must be equal, estimated ones
// within the documented bound.

const NOW = Date.parse('2025-06-01T12:00:00Z')
const HOUR = 3_600_000
const pick = <T>(xs: readonly T[]) => fc.constantFrom(...xs)

const INSTALLS = ['', 'i0', 'i1', 'i2', 'i3']
const CUSTOMERS = ['', 'c0', 'c1']
const SESSIONS = ['', 's0', 's1', 's2', 's3']
const TEXTS = ['a', 'b', 'ab', '1', '10', '2.5', '-3', '1.50']
const ZONES = ['UTC', 'America/New_York', 'Asia/Kolkata']
/** A time from `from` hours before `now` to 12 hours after it. */
const timeNear = (now: number, from = 40 * 24) =>
  fc
    .integer({ min: -from, max: 12 })
    .chain((h) => fc.integer({ min: 0, max: HOUR - 1 }).map((ms) => now + h * HOUR + ms))
const time = timeNear(NOW)

const eventAt = (time: fc.Arbitrary<number>) =>
  fc.record({
    install_uuid: pick(INSTALLS),
    customer_id: pick(CUSTOMERS),
    session_uuid: pick(SESSIONS),
    event_name: pick(['A', 'B', 'C']),
    event_time: time,
    attributes: fc.dictionary(pick(['k1', 'k2']), pick(TEXTS), { maxKeys: 2 }),
    ltv_change: fc.integer({ min: -5, max: 50 }),
    country: pick(['', 'fr', 'de']),
    language: pick(['', 'en']),
    app_version: pick(['1.0', '2.0']),
    os_version: pick(['17']),
    platform: pick(['iOS', 'Android']),
    model: pick(['', 'm1']),
    source: pick(['server', 'sdk']),
  })
const event = eventAt(time)
const sessionAt = (time: fc.Arbitrary<number>) =>
  fc.record({
    session_uuid: pick(SESSIONS.filter((s) => s !== '')),
    install_uuid: pick(INSTALLS),
    customer_id: pick(CUSTOMERS),
    started_at: time,
    app_ver: pick(['1.0', '2.0']),
    os_ver: pick(['17']),
    platform: pick(['iOS', 'Android']),
    country: pick(['', 'fr', 'de']),
  })
const session = sessionAt(time)

const METRICS = [
  'users',
  'occurrences',
  'sessions',
  'sessions_per_event',
  'ltv',
  'new_users',
  'avg(a:k1)',
  'sum(n:k1)',
  'min(a:k2)',
  'max(n:k2)',
]
const DIMENSIONS = [
  'day',
  'week',
  'month',
  'hour',
  'event_name',
  'country',
  'platform',
  'app_version',
  'a:k1',
  'birth_day',
  'new_device',
]
const operand = fc.oneof(
  pick(TEXTS),
  pick(['A', 'B', 'fr', 'de', 'iOS', '2025-05-30', '2025-06-01', 'true']),
  fc.integer({ min: -3, max: 12 }),
  fc.constant(null),
)
const dimCondition = fc.oneof(
  operand,
  fc
    .tuple(pick(['in', 'not_in']), fc.array(operand, { minLength: 1, maxLength: 3 }))
    .map(([op, xs]) => [op, ...xs]),
  fc.tuple(pick(['==', '!=']), operand).map(([op, x]) => [op, x]),
  fc
    .tuple(
      pick(['<', '<=', '>', '>=']),
      operand.filter((x) => x !== null),
    )
    .map(([op, x]) => [op, x]),
  fc
    .tuple(
      operand.filter((x) => x !== null),
      operand.filter((x) => x !== null),
    )
    .map(([a, b]) => ['between', a, b]),
  fc
    .array(fc.tuple(pick(['G1', 'G2']), fc.array(operand, { minLength: 1, maxLength: 2 })), {
      minLength: 1,
      maxLength: 2,
    })
    .map((groups) => ['in_groups', Object.fromEntries(groups)]),
)
const metricCondition = fc.oneof(
  fc
    .tuple(pick(['<', '<=', '>', '>=', '==', '!=']), fc.integer({ min: 0, max: 4 }))
    .map(([op, x]) => [op, x]),
  fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 5 })).map(([a, b]) => ['between', a, b]),
)
// Day-like dimensions take date operands only; the others any operand.
const DATE_DIMS = new Set(['day', 'week', 'birth_day', 'month', 'hour'])

const queryInputOf = (
  metrics: string[],
  dimensions: string[],
  zones: string[],
  between = { from: ['2025-05-20', '2025-05-31'], to: ['2025-05-31', '2025-06-01'] },
) =>
  fc
    .record({
      metrics: fc.uniqueArray(pick(metrics), { minLength: 1, maxLength: 3 }),
      dimensions: fc.uniqueArray(pick(dimensions), { maxLength: 2 }),
      days: fc.option(pick([1, 2, 7, 30])),
      zone: pick(zones),
      dimConditions: dimensions.some((d) => !DATE_DIMS.has(d))
        ? fc.dictionary(pick(dimensions.filter((d) => !DATE_DIMS.has(d))), dimCondition, { maxKeys: 2 })
        : fc.constant({}),
      dayBetween: fc.option(fc.tuple(pick(between.from), pick(between.to))),
      metricCondition: fc.option(metricCondition),
    })
    .map((r) => {
      const conditions: Record<string, unknown> = { ...r.dimConditions }
      if (r.dayBetween) conditions.day = ['between', ...r.dayBetween]
      const integerMetric = r.metrics.find((m) =>
        ['users', 'occurrences', 'sessions', 'ltv', 'new_users'].includes(m),
      )
      if (r.metricCondition && integerMetric) conditions[integerMetric] = r.metricCondition
      return { ...r, conditions }
    })

const queryInput = queryInputOf(METRICS, DIMENSIONS, ZONES)
/** Queries the rollup answers: its metrics and dimensions, zones with whole-hour offsets. */
const rollupQueryInput = queryInputOf(
  ['users', 'occurrences', 'sessions', 'sessions_per_event', 'ltv'],
  ['day', 'week', 'month', 'hour', 'event_name'],
  ['UTC', 'America/New_York', 'Europe/Paris'],
)
/** Queries the session rollup answers: average_session_length (and sessions) by time units. */
const sessionQueryInput = (now: number) => {
  const day = (d: number) => new Date(now - d * 24 * HOUR).toISOString().slice(0, 10)
  return queryInputOf(
    ['sessions', 'average_session_length'],
    ['day', 'week', 'month', 'hour'],
    ['UTC', 'America/New_York', 'Europe/Paris'],
    { from: [day(10), day(1)], to: [day(1), day(0)] },
  ).filter((input) => input.metrics.includes('average_session_length'))
}
type QueryInput = typeof queryInput extends fc.Arbitrary<infer T> ? T : never

/** Numbers compared to 9 significant digits: averages are summed in another order. */
const canonical = (rows: ResultRow[]) =>
  rows
    .map((row) =>
      JSON.stringify(
        Object.fromEntries(
          Object.entries(row).map(([k, v]) => [k, typeof v === 'number' ? Number(v.toPrecision(9)) : v]),
        ),
      ),
    )
    .sort()

/**
 * The engine's rows against the evaluator's: the same rows (by their dimension values), exact
 * metrics equal, the compiled query's estimated metrics within the documented bound.
 */
function expectSameAnswer(got: ResultRow[], want: ResultRow[], compiled: CompiledQuery) {
  const estimated = new Set(compiled.estimated)
  if (estimated.size === 0) {
    expect(canonical(got)).toEqual(canonical(want))
    return
  }
  const dims = compiled.columns.filter((c) => !c.metric).map((c) => c.name)
  const keyed = (rows: ResultRow[]) =>
    new Map(rows.map((r) => [JSON.stringify(dims.map((d) => r[d])), r] as const))
  const g = keyed(got)
  const w = keyed(want)
  expect([...g.keys()].sort()).toEqual([...w.keys()].sort())
  for (const [key, wantRow] of w) {
    const gotRow = g.get(key)!
    for (const { name } of compiled.columns.filter((c) => c.metric)) {
      const [a, b] = [gotRow[name], wantRow[name]]
      if (estimated.has(name) && typeof a === 'number' && typeof b === 'number')
        expect(withinEstimate(a, b), `${name} ${a} vs ${b} (${key})`).toBe(true)
      else expect(canonical([{ [name]: a ?? null }])).toEqual(canonical([{ [name]: b ?? null }]))
    }
  }
}

let store: ChdbStore
let cleanup: () => Promise<void>
let runs = 0

describe('query compiler vs in-memory evaluator (embedded engine)', () => {
  beforeAll(async () => {
    const dir = await tempDir('query-property')
    cleanup = dir.cleanup
    store = await ChdbStore.open(dir.path)
    await migrate(store)
  })
  afterAll(async () => {
    await store.close()
    await cleanup()
  })

  /** Rollup queries compiled on UTC days, which the daily projection answers. */
  let utcDayQueries = 0

  /** Stores the rows under a new app, runs the compiled query and compares it with the evaluator. */
  async function check(
    eventsIn: Omit<QueryEventRow, 'app_id'>[],
    sessionsIn: Omit<QuerySessionRow, 'app_id'>[],
    input: QueryInput,
    o: { now?: number; rawLog?: Omit<QueryRawLogRow, 'app_id'>[]; rollups?: boolean } = {},
  ): Promise<CompiledQuery['source']> {
    const now = o.now ?? NOW
    const app = `app${runs++}`
    const events: QueryEventRow[] = eventsIn.map((e) => ({ ...e, app_id: app }))
    const sessions: QuerySessionRow[] = sessionsIn.map((s) => ({ ...s, app_id: app }))
    if (events.length > 0)
      await store.insert(
        'events',
        events.map((e, i) => ({
          ...e,
          uuid: `u${i}`,
          event_time: engineTime(e.event_time),
          received_at: engineTime(e.event_time),
        })),
      )
    if (sessions.length > 0)
      await store.insert(
        'sessions',
        sessions.map((s) => ({ ...s, started_at: engineTime(s.started_at) })),
      )
    const rawLog: QueryRawLogRow[] = (o.rawLog ?? []).map((r) => ({ ...r, app_id: app }))
    if (rawLog.length > 0)
      await store.insert(
        'raw_log',
        rawLog.map((r) => ({
          ...r,
          // A row sent twice is the same row (the same uuid): the raw log may keep both copies.
          uuid: `${r.type}-${r.session_uuid}-${r.at}`,
          at: engineTime(r.at),
          received_at: engineTime(r.at),
        })),
      )
    const query = parseQuery({
      app_id: app,
      metrics: input.metrics,
      dimensions: input.dimensions,
      conditions: JSON.stringify(input.conditions),
      ...(input.days !== null && { days: String(input.days) }),
    })
    const compiled = compileQuery(query, {
      now,
      timeZone: input.zone,
      profiledbId: 1,
      ...(o.rollups !== undefined && { rollups: o.rollups }),
    })
    // UTC days (migration 036's by_day projection) or hours.
    if (compiled.sql.includes('toDate(f.hour)')) utcDayQueries++
    const rows = await store.query<Record<string, unknown>>(compiled.sql, compiled.params)
    const got = resultRows(rows, compiled.columns, query.limit).results
    const want = evaluateQuery(query, input.zone, now, { events, sessions, rawLog })
    expectSameAnswer(got, want, compiled)
    return compiled.source
  }

  it('answers the same rows as the evaluator on random events, sessions and queries', async () => {
    const sources = { raw: 0, query_rollup: 0, query_session_hours: 0 }
    await fc.assert(
      fc.asyncProperty(
        fc.array(event, { minLength: 0, maxLength: 30 }),
        // One row per session, as `sessions FINAL` reads them.
        fc.uniqueArray(session, { maxLength: 4, selector: (x) => x.session_uuid }),
        queryInput,
        async (eventsIn, sessionsIn, input) => {
          sources[await check(eventsIn, sessionsIn, input)]++
        },
      ),
      { numRuns: 120 },
    )
    // Both ways of answering were exercised.
    expect(sources.raw).toBeGreaterThan(0)
    expect(sources.query_rollup).toBeGreaterThan(0)
  }, 600_000)

  it('answers queries that fit the rollup from it, as the evaluator does from the events', async () => {
    const sources = { raw: 0, query_rollup: 0, query_session_hours: 0 }
    const utcDaysBefore = utcDayQueries
    await fc.assert(
      fc.asyncProperty(
        fc.array(event, { minLength: 0, maxLength: 30 }),
        fc.uniqueArray(session, { maxLength: 4, selector: (x) => x.session_uuid }),
        rollupQueryInput,
        async (eventsIn, sessionsIn, input) => {
          sources[await check(eventsIn, sessionsIn, input)]++
        },
      ),
      { numRuns: 60 },
    )
    // Every query of this shape is the rollup's, some of them read by UTC day, some by the hour.
    expect(sources).toEqual({ raw: 0, query_rollup: 60, query_session_hours: 0 })
    expect(utcDayQueries - utcDaysBefore).toBeGreaterThan(0)
    expect(utcDayQueries - utcDaysBefore).toBeLessThan(60)
  }, 600_000)

  it('answers session lengths by time from the session rollup, and from the raw log, as the evaluator does', async () => {
    // Times near the real clock: the raw log and the session lengths expire rows 30 days old.
    const recent = Math.floor(Date.now() / HOUR) * HOUR
    const near = timeNear(recent, 20 * 24)
    const rawRow = fc.record({ session_uuid: pick(SESSIONS), type: pick(['s', 'e', 'c']), at: near })
    const sources = { raw: 0, query_rollup: 0, query_session_hours: 0 }
    await fc.assert(
      fc.asyncProperty(
        fc.array(eventAt(near), { minLength: 0, maxLength: 30 }),
        fc.uniqueArray(sessionAt(near), { maxLength: 4, selector: (x) => x.session_uuid }),
        // Starts, events and closes, some sessions with no start, some rows replayed (a row twice).
        fc
          .array(rawRow, { maxLength: 12 })
          .chain((rows) => fc.subarray(rows).map((again) => [...rows, ...again])),
        sessionQueryInput(recent),
        fc.boolean(),
        async (eventsIn, sessionsIn, rawLog, input, rollups) => {
          sources[await check(eventsIn, sessionsIn, input, { now: recent, rawLog, rollups })]++
        },
      ),
      { numRuns: 60 },
    )
    // Both ways were checked, the rollup's for every query it was allowed to answer.
    expect(sources.raw).toBeGreaterThan(0)
    expect(sources.query_session_hours).toBeGreaterThan(0)
    expect(sources.query_rollup).toBe(0)
  }, 600_000)
})
