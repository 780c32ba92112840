import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { compileQuery } from '../../pipelines/query/compile-query.ts'
import {
  evaluateQuery,
  type QueryEventRow,
  type QuerySessionRow,
} from '../../pipelines/query/evaluate-query.ts'
import { parseQuery } from '../../pipelines/query/parse-query.ts'
import { resultRows, type ResultRow } from '../../pipelines/query/result-set.ts'
import { engineTime } from '../helpers/audience-data.ts'
import { tempDir } from '../helpers/temp.ts'

// On random events and sessions, the compiled query run in the embedded engine answers the rows
// the in-memory evaluator (written from docs/query-api.md) computes for the same query. Each run
// uses its own app in one shared store. fast-check prints the seed and path of a failure.

const NOW = Date.parse('2025-06-01T12:00:00Z')
const HOUR = 3_600_000
const pick = <T>(xs: readonly T[]) => fc.constantFrom(...xs)

const INSTALLS = ['', 'i0', 'i1', 'i2', 'i3']
const CUSTOMERS = ['', 'c0', 'c1']
const SESSIONS = ['', 's0', 's1', 's2', 's3']
const TEXTS = ['a', 'b', 'ab', '1', '10', '2.5', '-3', '1.50']
const ZONES = ['UTC', 'America/New_York', 'Asia/Kolkata']
const time = fc
  .integer({ min: -40 * 24, max: 12 })
  .chain((h) => fc.integer({ min: 0, max: HOUR - 1 }).map((ms) => NOW + h * HOUR + ms))

const event = fc.record({
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
const session = fc.record({
  session_uuid: pick(SESSIONS.filter((s) => s !== '')),
  install_uuid: pick(INSTALLS),
  customer_id: pick(CUSTOMERS),
  started_at: time,
  app_ver: pick(['1.0', '2.0']),
  os_ver: pick(['17']),
  platform: pick(['iOS', 'Android']),
  country: pick(['', 'fr', 'de']),
})

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

const queryInput = fc
  .record({
    metrics: fc.uniqueArray(pick(METRICS), { minLength: 1, maxLength: 3 }),
    dimensions: fc.uniqueArray(pick(DIMENSIONS), { maxLength: 2 }),
    days: fc.option(pick([1, 2, 7, 30])),
    zone: pick(ZONES),
    dimConditions: fc.dictionary(pick(DIMENSIONS.filter((d) => !DATE_DIMS.has(d))), dimCondition, {
      maxKeys: 2,
    }),
    dayBetween: fc.option(fc.tuple(pick(['2025-05-20', '2025-05-31']), pick(['2025-05-31', '2025-06-01']))),
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

  it('answers the same rows as the evaluator on random events, sessions and queries', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(event, { minLength: 0, maxLength: 30 }),
        // One row per session, as `sessions FINAL` reads them.
        fc.uniqueArray(session, { maxLength: 4, selector: (x) => x.session_uuid }),
        queryInput,
        async (eventsIn, sessionsIn, input) => {
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
          const query = parseQuery({
            app_id: app,
            metrics: input.metrics,
            dimensions: input.dimensions,
            conditions: JSON.stringify(input.conditions),
            ...(input.days !== null && { days: String(input.days) }),
          })
          const compiled = compileQuery(query, { now: NOW, timeZone: input.zone, profiledbId: 1 })
          const rows = await store.query<Record<string, unknown>>(compiled.sql, compiled.params)
          const got = resultRows(rows, compiled.columns, query.limit).results
          const want = evaluateQuery(query, input.zone, NOW, { events, sessions })
          expect(canonical(got)).toEqual(canonical(want))
        },
      ),
      { numRuns: 120 },
    )
  })
})
