import { copyFile, mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { MIGRATIONS_DIR, migrate } from '../../pipelines/connectors/store/migrations.ts'
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

/**
 * The query rollups (migrations 027 and 031) on a data directory that held events, sessions and
 * raw log rows before them: the migrations backfill them, rows written afterwards (events through
 * the writer's `events_ingest`) reach them through the views, and nothing is counted twice. Rollup
 * answers are compared with the in-memory evaluator over every row stored, and session lengths
 * (which the evaluator does not compute) with the raw path's answer to the same query.
 */
const APP = 'rollup-app'
const HOUR = 3_600_000
// Recent: the raw log and the session lengths drop rows 30 days old (TTL), which a merge may do
// at any time.
const NOW = Math.floor(Date.now() / HOUR) * HOUR - 12 * HOUR + 1_234

const event = (i: number, over: Partial<QueryEventRow>): QueryEventRow => ({
  app_id: APP,
  install_uuid: `i${i % 4}`,
  customer_id: i % 3 === 0 ? `c${i}` : '',
  session_uuid: `s${i % 5}`,
  event_name: ['Buy', 'View', 'Share'][i % 3]!,
  event_time: NOW - (i % 50) * 5 * HOUR,
  attributes: i % 4 === 0 ? {} : { category: ['shoes', 'hats', 'bags'][i % 3]! },
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

const eventRow = (e: QueryEventRow, uuid: string) => ({
  ...e,
  uuid,
  transaction_id: 'tx',
  event_time: engineTime(e.event_time),
  received_at: engineTime(e.event_time),
})

/** A session's rows in the SDK's raw log: its start, and a close `length` ms later (or none). */
const rawLogRows = (s: QuerySessionRow, length: number | undefined, replayed = false) =>
  [
    { type: 's', at: s.started_at },
    ...(length === undefined ? [] : [{ type: 'c', at: s.started_at + length }]),
    ...(replayed ? [{ type: 's', at: s.started_at }] : []),
  ].map((r, i) => ({
    app_id: s.app_id,
    type: r.type,
    uuid: `${s.session_uuid}-${r.type}-${i}`,
    at: engineTime(r.at),
    install_uuid: s.install_uuid,
    device_uuid: s.install_uuid,
    session_uuid: s.session_uuid,
    transaction_id: 'tx',
    received_at: engineTime(r.at),
  }))

describe('query rollups on data stored before them', () => {
  let dir: { path: string; cleanup: () => Promise<void> }
  let store: ChdbStore
  const before = Array.from({ length: 40 }, (_, i) => event(i, {}))
  const after = Array.from({ length: 25 }, (_, i) => event(i + 100, { country: 'es' }))
  const sessions = Array.from({ length: 5 }, (_, i) => session(i))
  // Sessions started after the upgrade (their starts through `sessions`, their logs through raw_log).
  const laterSessions = [5, 6].map((i) => ({
    ...session(i),
    session_uuid: `s${i}`,
    started_at: NOW - i * HOUR,
  }))

  beforeAll(async () => {
    dir = await tempDir('query-rollup')
    const old = join(dir.path, 'migrations-before')
    await mkdir(old)
    for (const file of await readdir(MIGRATIONS_DIR))
      if (/^\d{3}_.*\.sql$/.test(file) && Number.parseInt(file, 10) < 27)
        await copyFile(join(MIGRATIONS_DIR, file), join(old, file))
    store = await ChdbStore.open(join(dir.path, 'clickhouse'))
    await migrate(store, old)
    await store.insert(
      'events',
      before.map((e, i) => eventRow(e, `b${i}`)),
    )
    // A replayed session start: `sessions FINAL` reads it once, and so must the rollup.
    const sessionRows = [...sessions, sessions[0]!].map((s) => ({
      ...s,
      started_at: engineTime(s.started_at),
    }))
    await store.insert('sessions', sessionRows)
    // Session s0 with a replayed start row, s1 without a close (length 0), s4 with none in the log.
    await store.insert('raw_log', [
      ...rawLogRows(sessions[0]!, 65_000, true),
      ...rawLogRows(sessions[1]!, undefined),
      ...rawLogRows(sessions[2]!, 1_500),
      ...rawLogRows(sessions[3]!, 600_000),
    ])
    const result = await migrate(store)
    expect(result.applied).toEqual(expect.arrayContaining([27, 31]))
    // After the upgrade, the writers' way in.
    await store.insert(
      'events_ingest',
      after.map((e, i) => eventRow(e, `a${i}`)),
    )
    await store.insert(
      'sessions',
      laterSessions.map((s) => ({ ...s, started_at: engineTime(s.started_at) })),
    )
    // s2's log again (a replay) and the later sessions' logs, one of them closed in a second insert.
    await store.insert('raw_log', [
      ...rawLogRows(sessions[2]!, 1_500),
      ...rawLogRows(laterSessions[0]!, undefined),
      ...rawLogRows(laterSessions[1]!, 30_000),
    ])
    await store.insert('raw_log', [{ ...rawLogRows(laterSessions[0]!, 42_000)[1]!, uuid: 'late-close' }])
  })
  afterAll(async () => {
    await store.close()
    await dir.cleanup()
  })

  const answer = async (params: Record<string, string>, timeZone = 'Europe/Paris') => {
    const q = parseQuery({ app_id: APP, ...params })
    const compiled = compileQuery(q, { now: NOW, timeZone, profiledbId: 1 })
    const rows = await store.query<Record<string, unknown>>(compiled.sql, compiled.params)
    const want = evaluateQuery(q, timeZone, NOW, {
      events: [...before, ...after],
      sessions: [...sessions, ...laterSessions],
    })
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

    // Sessions and users (the replayed start counted once), by week.
    const weekly = await answer({ metrics: 'sessions,users', dimensions: 'week' })
    expect(weekly.compiled.source).toBe('query_rollup')
    expect(weekly.got).toEqual(weekly.want)
  })

  it('counts sessions exactly from the session rollup, before and after the migration', async () => {
    const queries: Record<string, string>[] = [
      { metrics: 'sessions', dimensions: 'day' },
      { metrics: 'sessions', dimensions: 'week', days: '3' },
      { metrics: 'sessions', dimensions: 'hour', conditions: JSON.stringify({ sessions: ['>=', 1] }) },
    ]
    for (const params of queries) {
      const r = await answer(params)
      expect(r.compiled.source).toBe('query_session_rollup')
      expect(r.compiled.estimated).toEqual([])
      expect(r.got).toEqual(r.want)
    }
    // Every session: the five from before (s0 … s4 also carry events) and the two after.
    const total = await answer({ metrics: 'sessions' })
    expect(total.got.map((r) => (JSON.parse(r) as ResultRow).sessions)).toEqual([7])
  })

  it('answers session lengths from the rollup as the raw log does', async () => {
    const both = async (params: Record<string, string>) => {
      const q = parseQuery({ app_id: APP, ...params })
      const run = async (rollups: boolean) => {
        const compiled = compileQuery(q, { now: NOW, timeZone: 'Europe/Paris', profiledbId: 1, rollups })
        const rows = await store.query<Record<string, unknown>>(compiled.sql, compiled.params)
        return { source: compiled.source, results: resultRows(rows, compiled.columns, q.limit).results }
      }
      return { rollup: await run(true), raw: await run(false) }
    }
    const total = await both({ metrics: 'sessions,average_session_length' })
    expect(total.rollup.source).toBe('query_session_rollup')
    expect(total.raw.source).toBe('raw')
    // Lengths: s0 65 s (its replayed start changes nothing), s1 0, s2 1.5 s (replayed), s3 600 s,
    // s5 42 s (closed in a later insert), s6 30 s; s4 has none.
    const want = (65 + 0 + 1.5 + 600 + 42 + 30) / 6
    expect(total.raw.results).toEqual([{ sessions: 7, average_session_length: want }])
    expect(total.rollup.results).toEqual(total.raw.results)
    const queries: Record<string, string>[] = [
      { metrics: 'average_session_length,sessions', dimensions: 'day' },
      { metrics: 'average_session_length', dimensions: 'week', days: '2' },
    ]
    for (const params of queries) {
      const r = await both(params)
      expect(r.rollup.source).toBe('query_session_rollup')
      expect(r.rollup.results.length).toBeGreaterThan(0)
      expect(r.rollup.results).toEqual(r.raw.results)
    }
  })

  it('answers one attribute whose absent value is excluded from the attribute rollup', async () => {
    const byCategory = await answer(
      {
        metrics: 'occurrences,users,ltv',
        dimensions: 'a:category,event_name',
        conditions: JSON.stringify({ 'a:category': ['not_in', 'hats', null] }),
      },
      'UTC',
    )
    expect(byCategory.compiled.source).toBe('query_attribute_rollup')
    expect(byCategory.compiled.estimated).toEqual(['users'])
    expect(byCategory.got).toEqual(byCategory.want)
    // Shoes and bags, before the migration (backfilled) and after it (through the view).
    const rows = byCategory.got.map((r) => JSON.parse(r) as ResultRow)
    const carrying = [...before, ...after].filter((e) =>
      ['shoes', 'bags'].includes(e.attributes.category ?? ''),
    )
    expect(rows.reduce((n, r) => n + Number(r.occurrences), 0)).toBe(carrying.length)

    const daily = await answer(
      {
        metrics: 'occurrences',
        dimensions: 'day',
        conditions: JSON.stringify({ 'a:category': ['in_groups', { Worn: ['shoes', 'hats'] }] }),
        days: '5',
      },
      'UTC',
    )
    expect(daily.compiled.source).toBe('query_attribute_rollup')
    expect(daily.got).toEqual(daily.want)
    // An absent value that passes (not_in without null), or a zone other than UTC: the raw tables.
    const absent = await answer(
      {
        metrics: 'occurrences',
        dimensions: 'a:category',
        conditions: JSON.stringify({ 'a:category': ['!=', 'hats'] }),
      },
      'UTC',
    )
    expect(absent.compiled.source).toBe('raw')
    expect(absent.got).toEqual(absent.want)
    expect(absent.got.map((r) => JSON.parse(r) as ResultRow).some((r) => r['a:category'] === null)).toBe(true)
    const paris = await answer({
      metrics: 'occurrences',
      dimensions: 'a:category',
      conditions: JSON.stringify({ 'a:category': 'shoes' }),
    })
    expect(paris.compiled.source).toBe('raw')
    expect(paris.got).toEqual(paris.want)
  })
})
