import { join } from 'node:path'
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
import { engineTime, queryEventRow } from '../helpers/audience-data.ts'
import { openMigratedChdb } from '../helpers/migrated-chdb.ts'
import { tempDir } from '../helpers/temp.ts'

/**
 * The query rollup (migration 027) on a data directory that held events and sessions before it:
 * the migration backfills them, events written afterwards through the writer's `events_ingest`
 * reach them through the views, and nothing is counted twice. Rollup answers are compared with the
 * in-memory evaluator over every row stored.
 */
const APP = 'rollup-app'
const NOW = Date.parse('2025-06-01T12:00:00Z')
const HOUR = 3_600_000

const event = (i: number, over: Partial<QueryEventRow>): QueryEventRow => ({
  app_id: APP,
  install_uuid: `i${i % 4}`,
  customer_id: i % 3 === 0 ? `c${i}` : '',
  session_uuid: `s${i % 5}`,
  event_name: ['Buy', 'View', 'Share'][i % 3]!,
  event_time: NOW - (i % 50) * 5 * HOUR,
  attributes: {},
  ltv_change: i % 7,
  country: ['fr', 'de', ''][i % 3]!,
  language: 'en',
  app_version: i % 2 === 0 ? '1.0' : '2.0',
  os_version: '17',
  platform: i % 2 === 0 ? 'iOS' : 'Android',
  model: 'm1',
  source: 'sdk',
  ...over,
})
const session = (i: number): QuerySessionRow => ({
  app_id: APP,
  session_uuid: `s${i}`,
  install_uuid: `i${i % 4}`,
  customer_id: '',
  started_at: NOW - i * 11 * HOUR,
  app_ver: '1.0',
  os_ver: '17',
  platform: 'iOS',
  country: 'fr',
})

describe('query rollup on data stored before it', () => {
  let store: ChdbStore
  let cleanup: () => Promise<void>
  const before = Array.from({ length: 40 }, (_, i) => event(i, {}))
  const after = Array.from({ length: 25 }, (_, i) => event(i + 100, { country: 'es' }))
  const sessions = Array.from({ length: 5 }, (_, i) => session(i))
  /** Written by the last test, after the others (the answers count them from then on). */
  const later: QueryEventRow[] = []

  beforeAll(async () => {
    ;({ store, cleanup } = await openMigratedChdb('query-rollup', { before: 27 }))
    await store.insert(
      'events',
      before.map((e, i) => queryEventRow(e, `b${i}`)),
    )
    // A replayed session start: `sessions FINAL` reads it once, and so must the rollup.
    const sessionRows = [...sessions, sessions[0]!].map((s) => ({
      ...s,
      started_at: engineTime(s.started_at),
    }))
    await store.insert('sessions', sessionRows)
    const result = await migrate(store)
    expect(result.applied).toContain(27)
    // After the upgrade, the events writer's way in.
    await store.insert(
      'events_ingest',
      after.map((e, i) => queryEventRow(e, `a${i}`)),
    )
  })
  afterAll(() => cleanup())

  const answer = async (params: Record<string, string>, rollups = true, timeZone = 'Europe/Paris') => {
    const q = parseQuery({ app_id: APP, ...params })
    const compiled = compileQuery(q, { now: NOW, timeZone, profiledbId: 1, rollups })
    const rows = await store.query<Record<string, unknown>>(compiled.sql, compiled.params)
    const want = evaluateQuery(q, timeZone, NOW, { events: [...before, ...after, ...later], sessions })
    // The evaluator keeps no order: both sorted.
    const sorted = (xs: ResultRow[]) => xs.map((r) => JSON.stringify(r)).sort()
    return { compiled, got: sorted(resultRows(rows, compiled.columns, q.limit).results), want: sorted(want) }
  }

  it('answers from the rollup what was stored before the migration and after it, each once', async () => {
    const byName = await answer({ metrics: 'occurrences,ltv,users,sessions', dimensions: 'event_name' })
    expect(byName.compiled.source).toBe('query_rollup')
    expect(byName.compiled.estimated).toEqual(['users', 'sessions'])
    expect(byName.got).toEqual(byName.want)
    expect(byName.got.reduce((n, r) => n + Number((JSON.parse(r) as ResultRow).occurrences), 0)).toBe(65)

    const byCountry = await answer({
      metrics: 'users,sessions,occurrences',
      dimensions: 'day,country',
      days: '7',
    })
    // A device dimension: the raw tables, which hold the same rows.
    expect(byCountry.compiled.source).toBe('raw')
    expect(byCountry.got).toEqual(byCountry.want)
    // The events written after the upgrade are the only ones from Spain, all in the last 5 days.
    expect(
      byCountry.got
        .map((r) => JSON.parse(r) as ResultRow)
        .filter((r) => r.country === 'es')
        .reduce((n, r) => n + Number(r.occurrences), 0),
    ).toBe(after.length)

    // Sessions alone (the replayed start counted once), by week.
    const weekly = await answer({ metrics: 'sessions,users', dimensions: 'week' })
    expect(weekly.compiled.source).toBe('query_rollup')
    expect(weekly.got).toEqual(weekly.want)

    // Sessions alone by day (the rollup's session states only), and the same query with the rollup
    // turned off: the raw tables' facts, pruned to the columns it reads, give the same rows.
    const daily = await answer({ metrics: 'sessions', dimensions: 'day' })
    expect(daily.compiled.source).toBe('query_rollup')
    expect(daily.compiled.sql).not.toMatch(/\busers\b/)
    expect(daily.got).toEqual(daily.want)
    const raw = await answer({ metrics: 'sessions', dimensions: 'day' }, false)
    expect(raw.compiled.source).toBe('raw')
    expect(raw.compiled.sql).not.toContain('attributes')
    expect(raw.got).toEqual(daily.got)
  })

  /** The projection of query_rollup the engine reads for a compiled query, or the table's own rows. */
  const readFrom = async (compiled: { sql: string; params: Record<string, unknown> }) => {
    const plan = await store.query<{ explain: string }>(
      `EXPLAIN projections = 1 ${compiled.sql}`,
      compiled.params,
    )
    return plan.flatMap((r) => /ReadFromMergeTree \((.+)\)/.exec(r.explain)?.[1] ?? [])
  }

  it('answers UTC days from the daily projection, for parts stored before migration 036 and merged after', async () => {
    // Every part of the rollup, the backfilled ones included, holds the projection (chdb is 26.x).
    const unprojected = async () =>
      store.query<{ name: string }>(
        `SELECT name FROM system.parts WHERE database = currentDatabase() AND table = 'query_rollup' AND active
           AND name NOT IN (SELECT parent_name FROM system.projection_parts
                            WHERE database = currentDatabase() AND table = 'query_rollup' AND active
                            AND name = 'by_day' GROUP BY parent_name)`,
      )
    expect(await unprojected()).toEqual([])
    const shapes = [
      [{ metrics: 'users,sessions', dimensions: 'day', days: '30' }, 'by_day'],
      [{ metrics: 'users', dimensions: 'week' }, 'by_day'],
      [{ metrics: 'occurrences,ltv', dimensions: 'month' }, 'by_day'],
      // By event name: the hourly rows (the projection keeps none).
      [{ metrics: 'occurrences', dimensions: 'day,event_name', days: '7' }, 'sluice.query_rollup'],
      [{ metrics: 'users', dimensions: 'event_name' }, 'sluice.query_rollup'],
      // By the hour: the hourly rows.
      [{ metrics: 'occurrences', dimensions: 'hour', days: '2' }, 'sluice.query_rollup'],
    ] as const
    const check = async () => {
      for (const [params, projection] of shapes) {
        const utc = await answer(params, true, 'UTC')
        expect([params, utc.compiled.source, await readFrom(utc.compiled)]).toEqual([
          params,
          'query_rollup',
          [projection],
        ])
        expect(utc.got).toEqual(utc.want)
        expect(utc.got.length).toBeGreaterThan(0)
      }
    }
    await check()
    // More events in new parts, then merged (the projections rebuilt from the merged rows): the
    // same answers as the evaluator over every event.
    const more = Array.from({ length: 30 }, (_, i) => event(i + 200, { event_name: 'Late' }))
    later.push(...more)
    await store.insert(
      'events_ingest',
      more.map((e, i) => queryEventRow(e, `l${i}`)),
    )
    await store.command('OPTIMIZE TABLE query_rollup FINAL')
    expect(await unprojected()).toEqual([])
    await check()
    const late = await answer({ metrics: 'occurrences', dimensions: 'event_name' }, true, 'UTC')
    expect(late.got.map((r) => JSON.parse(r) as ResultRow).find((r) => r.event_name === 'Late')).toEqual({
      event_name: 'Late',
      occurrences: 30,
    })
  })
})

describe('query rollup on an engine older than 26.1', () => {
  let dir: { path: string; cleanup: () => Promise<void> }
  let store: ChdbStore
  beforeAll(async () => {
    dir = await tempDir('query-rollup-old')
    store = await ChdbStore.open(join(dir.path, 'clickhouse'))
  })
  afterAll(async () => {
    await store.close()
    await dir.cleanup()
  })

  it('records migration 036 without the daily projection, and answers UTC days from the hourly rows', async () => {
    // The engine as a 25.8 server reports itself; everything else is chdb's.
    const older = new Proxy(store, {
      get(target, key, receiver) {
        if (key === 'query')
          return (sql: string, params?: Record<string, unknown>) =>
            /^SELECT version\(\)/.test(sql)
              ? Promise.resolve([{ v: '25.8.4.13' }])
              : target.query(sql, params)
        const value = Reflect.get(target, key, receiver) as unknown
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
      },
    })
    const result = await migrate(older)
    expect(result.applied).toContain(36)
    const [settings] = await store.query<{ create: string }>(
      "SELECT create_table_query AS create FROM system.tables WHERE database = currentDatabase() AND name = 'query_rollup'",
    )
    expect(settings?.create).toContain("deduplicate_merge_projection_mode = 'rebuild'")
    expect(settings?.create).not.toContain('PROJECTION')
    // The next start finds it recorded (the same checksum whatever the engine left out).
    expect((await migrate(store)).skipped).toContain(36)
    const events = Array.from({ length: 12 }, (_, i) => event(i, {}))
    await store.insert(
      'events_ingest',
      events.map((e, i) => queryEventRow(e, `o${i}`)),
    )
    const q = parseQuery({ app_id: APP, metrics: 'users,occurrences', dimensions: 'day', days: '30' })
    const compiled = compileQuery(q, { now: NOW, timeZone: 'UTC', profiledbId: 1 })
    expect(compiled.sql).toContain('toString(toDate(f.hour))')
    const rows = await store.query<Record<string, unknown>>(compiled.sql, compiled.params)
    const got = resultRows(rows, compiled.columns, q.limit).results
    const want = evaluateQuery(q, 'UTC', NOW, { events, sessions: [] })
    const sorted = (xs: ResultRow[]) => xs.map((r) => JSON.stringify(r)).sort()
    expect(sorted(got)).toEqual(sorted(want))
    expect(got.reduce((n, r) => n + Number(r.occurrences), 0)).toBe(12)
  })
})
