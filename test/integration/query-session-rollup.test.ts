import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { compileQuery } from '../../pipelines/query/compile-query.ts'
import {
  evaluateQuery,
  type QueryEventRow,
  type QueryRawLogRow,
  type QuerySessionRow,
} from '../../pipelines/query/evaluate-query.ts'
import { parseQuery } from '../../pipelines/query/parse-query.ts'
import { resultRows, type ResultRow } from '../../pipelines/query/result-set.ts'
import { engineTime, queryEventRow } from '../helpers/audience-data.ts'
import { openMigratedChdb } from '../helpers/migrated-chdb.ts'

/**
 * The session rollup (migration 038) on a data directory that held events, session starts and raw
 * log rows before it: the migration backfills them, rows written afterwards (events through the
 * writer's `events_ingest`) reach it through the views, a session whose rows straddle the upgrade
 * gets one length from both, and the answers are the raw path's and the evaluator's.
 */
const APP = 'session-rollup-app'
const HOUR = 3_600_000
const MINUTE = 60_000
// Near the real clock: the raw log and the session lengths keep 30 days.
const NOW = Math.floor(Date.now() / HOUR) * HOUR

const event = (session: string, t: number, i: number): QueryEventRow => ({
  app_id: APP,
  install_uuid: session === '' ? '' : `i-${session}`,
  customer_id: session === '' ? 'c-server' : '',
  session_uuid: session,
  event_name: 'View',
  event_time: t,
  attributes: {},
  ltv_change: i,
  country: 'fr',
  language: 'en',
  app_version: '1.0',
  os_version: '17',
  platform: 'iOS',
  model: 'm1',
  source: session === '' ? 'server' : 'sdk',
})
const start = (session: string, t: number): QuerySessionRow => ({
  app_id: APP,
  session_uuid: session,
  install_uuid: `i-${session}`,
  customer_id: '',
  started_at: t,
  app_ver: '1.0',
  os_ver: '17',
  platform: 'iOS',
  country: 'fr',
})
const raw = (session: string, type: string, at: number): QueryRawLogRow => ({
  app_id: APP,
  session_uuid: session,
  type,
  at,
})

// Before the upgrade: session A whole (120 s); session B's start and close (60 s so far), its
// close sent twice.
const A = NOW - 50 * HOUR
const B = NOW - 26 * HOUR
const before = {
  events: [event('A', A + MINUTE, 1)],
  sessions: [start('A', A), start('B', B)],
  rawLog: [raw('A', 's', A), raw('A', 'c', A + 120_000), raw('B', 's', B), raw('B', 'c', B + 60_000)],
  replayed: [raw('B', 'c', B + 60_000)],
}
// After it: B's late event (its length becomes 300 s), session C across two hours with no close
// (3,900 s), session D with events only (no start anywhere: counted, no length), and a server-side
// event with no session.
const C = NOW - 2 * HOUR
const after = {
  events: [
    event('B', B + 300_000, 2),
    event('C', C + HOUR + 5 * MINUTE, 3),
    event('D', NOW - 3 * HOUR, 4),
    event('', NOW - 5 * HOUR, 5),
  ],
  sessions: [start('C', C)],
  rawLog: [raw('B', 'e', B + 300_000), raw('C', 's', C), raw('C', 'e', C + HOUR + 5 * MINUTE)],
}

const sessionRow = (s: QuerySessionRow) => ({ ...s, started_at: engineTime(s.started_at) })
const rawRow = (r: QueryRawLogRow) => ({
  ...r,
  uuid: `${r.type}-${r.session_uuid}-${r.at}`,
  at: engineTime(r.at),
  received_at: engineTime(r.at),
})

describe('session rollup on data stored before it', () => {
  let store: ChdbStore
  let cleanup: () => Promise<void>

  beforeAll(async () => {
    ;({ store, cleanup } = await openMigratedChdb('query-session-rollup', { before: 38 }))
    await store.insert(
      'events',
      before.events.map((e, i) => queryEventRow(e, `b${i}`)),
    )
    await store.insert('sessions', before.sessions.map(sessionRow))
    await store.insert('raw_log', before.rawLog.map(rawRow))
    await store.insert('raw_log', before.replayed.map(rawRow))
    const result = await migrate(store)
    expect(result.applied).toContain(38)
    await store.insert(
      'events_ingest',
      after.events.map((e, i) => queryEventRow(e, `a${i}`)),
    )
    await store.insert('sessions', after.sessions.map(sessionRow))
    await store.insert('raw_log', after.rawLog.map(rawRow))
  })
  afterAll(() => cleanup())

  const answer = async (params: Record<string, string>, rollups = true) => {
    const q = parseQuery({ app_id: APP, ...params })
    const compiled = compileQuery(q, { now: NOW, timeZone: 'UTC', profiledbId: 1, rollups })
    const rows = await store.query<Record<string, unknown>>(compiled.sql, compiled.params)
    const want = evaluateQuery(q, 'UTC', NOW, {
      events: [...before.events, ...after.events],
      sessions: [...before.sessions, ...after.sessions],
      rawLog: [...before.rawLog, ...before.replayed, ...after.rawLog],
    })
    const sorted = (xs: ResultRow[]) => xs.map((r) => JSON.stringify(r)).sort()
    return { compiled, got: sorted(resultRows(rows, compiled.columns, q.limit).results), want: sorted(want) }
  }

  it('answers sessions and their lengths from the rollup, each session and row once', async () => {
    const total = await answer({ metrics: 'sessions,average_session_length', days: '7' })
    expect(total.compiled.source).toBe('query_session_hours')
    expect(total.compiled.estimated).toEqual([])
    expect(total.compiled.sql).not.toMatch(/\bFROM (events|sessions|raw_log)\b/)
    // A, B, C and D; lengths of A (120 s), B (300 s: its late event is its last row), C (3,900 s).
    expect(total.got).toEqual([JSON.stringify({ sessions: 4, average_session_length: 1440 })])
    expect(total.got).toEqual(total.want)

    const hourly = await answer({ metrics: 'average_session_length,sessions', dimensions: 'hour', days: '7' })
    expect(hourly.compiled.source).toBe('query_session_hours')
    expect(hourly.got).toEqual(hourly.want)
    const rows = hourly.got.map((r) => JSON.parse(r) as ResultRow)
    // C counts in the hour of its start and in the hour of its event; the server-side event's hour
    // is a row with no session.
    const hourOf = (t: number) => new Date(t).toISOString().slice(0, 13).replace('T', ' ') + ':00'
    expect(rows.filter((r) => r.average_session_length === 3900).map((r) => r.hour)).toEqual(
      [hourOf(C), hourOf(C + HOUR)].sort(),
    )
    expect(rows.find((r) => r.hour === hourOf(NOW - 5 * HOUR))).toEqual({
      hour: hourOf(NOW - 5 * HOUR),
      average_session_length: null,
      sessions: 0,
    })

    // The raw path (the raw log, events and sessions) gives the same rows.
    const shapes: Record<string, string>[] = [
      { metrics: 'sessions,average_session_length', dimensions: 'day', days: '7' },
      { metrics: 'average_session_length', dimensions: 'week' },
      {
        metrics: 'average_session_length',
        dimensions: 'day',
        conditions: JSON.stringify({ average_session_length: ['>', 200] }),
      },
    ]
    for (const params of shapes) {
      const fromRollup = await answer(params)
      const fromRaw = await answer(params, false)
      expect(fromRollup.compiled.source).toBe('query_session_hours')
      expect(fromRaw.compiled.source).toBe('raw')
      expect(fromRollup.got).toEqual(fromRaw.got)
      expect(fromRollup.got).toEqual(fromRollup.want)
    }

    // A dimension the rollup does not keep: the raw tables.
    const byCountry = await answer({ metrics: 'average_session_length', dimensions: 'country' })
    expect(byCountry.compiled.source).toBe('raw')
    expect(byCountry.got).toEqual(byCountry.want)
  })
})
