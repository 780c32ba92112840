import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { compileQuery } from '../../pipelines/query/compile-query.ts'
import { parseQuery } from '../../pipelines/query/parse-query.ts'
import { resultRows } from '../../pipelines/query/result-set.ts'
import { engineTime } from '../helpers/audience-data.ts'
import { openMigratedChdb } from '../helpers/migrated-chdb.ts'

/**
 * average_session_length from the raw log: each session's last raw log row minus its start, once
 * per session, whatever copies of a row a replayed upload stored (the compiled query reads the raw
 * log without FINAL, so the copies are there when it runs).
 */
const APP = 'length-app'
// Recent: the raw log keeps 30 days (its TTL drops older rows as they are written).
const NOW = Date.now()
const T = NOW - 6 * 3_600_000

const log = (type: string, uuid: string, session: string, at: number, receivedAt = at) => ({
  app_id: APP,
  type,
  uuid,
  at: engineTime(at),
  install_uuid: 'i1',
  device_uuid: 'i1',
  session_uuid: session,
  customer_id: '',
  transaction_id: 'tx',
  received_at: engineTime(receivedAt),
})
const event = (uuid: string, session: string, at: number) => ({
  app_id: APP,
  uuid,
  customer_id: '',
  event_name: 'View',
  event_time: engineTime(at),
  received_at: engineTime(at),
  install_uuid: 'i1',
  device_uuid: 'i1',
  session_uuid: session,
  source: 'sdk',
  transaction_id: 'tx',
})
const start = (session: string, at: number) => ({
  app_id: APP,
  session_uuid: session,
  install_uuid: 'i1',
  customer_id: '',
  started_at: engineTime(at),
})

describe('average session length from the raw log', () => {
  let store: ChdbStore
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    ;({ store, cleanup } = await openMigratedChdb('query-lengths'))
    // The copies must still be there when the query runs: no background merge collapses them.
    await store.command('SYSTEM STOP MERGES raw_log')
    // s1: 90 s (start, an event's row, close); s2: 10 s; s3: a close without its start (no length).
    await store.insert('raw_log', [
      log('s', 'r1', 's1', T),
      log('e', 'r2', 's1', T + 30_000),
      log('c', 'r3', 's1', T + 90_000),
      log('s', 'r4', 's2', T + 3_600_000),
      log('c', 'r5', 's2', T + 3_610_000),
      log('c', 'r6', 's3', T + 7_200_000),
    ])
    // The same upload replayed a minute later: its rows stored again, in a part of their own.
    await store.insert('raw_log', [
      log('s', 'r1', 's1', T, T + 60_000),
      log('c', 'r3', 's1', T + 90_000, T + 60_000),
    ])
    await store.insert('sessions', [start('s1', T), start('s2', T + 3_600_000)])
    await store.insert('events', [
      event('e1', 's1', T + 30_000),
      event('e2', 's2', T + 3_605_000),
      event('e3', 's3', T + 7_100_000),
    ])
  })
  afterAll(() => cleanup())

  it('counts each session once and averages the lengths of those with a start, copies or not', async () => {
    const [copies] = await store.query<{ n: number }>(
      `SELECT count() AS n FROM raw_log WHERE app_id = {app:String} AND uuid IN ('r1', 'r3')`,
      { app: APP },
    )
    expect(Number(copies!.n)).toBe(4)
    const q = parseQuery({
      app_id: APP,
      metrics: 'sessions,average_session_length',
      days: '2',
    })
    // From the raw log, and from the session rollup its view keeps (migration 038): the same.
    for (const [rollups, source] of [
      [false, 'raw'],
      [true, 'query_session_hours'],
    ] as const) {
      const compiled = compileQuery(q, { now: NOW, timeZone: 'UTC', profiledbId: 1, rollups })
      expect(compiled.source).toBe(source)
      const rows = await store.query<Record<string, unknown>>(compiled.sql, compiled.params)
      expect(resultRows(rows, compiled.columns, q.limit).results).toEqual([
        { sessions: 3, average_session_length: 50 },
      ])
    }
  })

  it('answers the other metrics asked beside it as they are answered without it', async () => {
    const run = async (params: Record<string, string>) => {
      const q = parseQuery({ app_id: APP, days: '2', ...params })
      const compiled = compileQuery(q, { now: NOW, timeZone: 'UTC', profiledbId: 1 })
      const rows = await store.query<Record<string, unknown>>(compiled.sql, compiled.params)
      return resultRows(rows, compiled.columns, q.limit).results
    }
    const others = 'users,occurrences,sessions,sessions_per_event,ltv,new_users'
    expect(await run({ metrics: `${others},average_session_length` })).toEqual([
      {
        users: 1,
        occurrences: 3,
        sessions: 3,
        sessions_per_event: 1,
        ltv: 0,
        new_users: 1,
        average_session_length: 50,
      },
    ])
    // By hour, with a condition on a metric: the same rows and numbers as without the lengths.
    const conditions = JSON.stringify({ occurrences: ['>', 0] })
    const withLengths = await run({
      metrics: `${others},average_session_length`,
      dimensions: 'hour',
      conditions,
    })
    const without = await run({ metrics: others, dimensions: 'hour', conditions })
    expect(without.length).toBeGreaterThan(0)
    expect(withLengths.map(({ average_session_length: _, ...rest }) => rest)).toEqual(without)
    expect(withLengths.map((r) => r.average_session_length).filter((l) => l !== null).length).toBeGreaterThan(
      0,
    )
  })
})
