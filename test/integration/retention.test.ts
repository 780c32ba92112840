import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { ClickHouseStore } from '../../pipelines/connectors/store/clickhouse-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import type { Retention } from '../../pipelines/connectors/store/retention.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import type { RetainedTableName } from '../../schemas/clickhouse/retention.ts'
import { loadConfig } from '../../services/config.ts'
import { migrateOptions } from '../../services/runtime.ts'
import { engineTime } from '../helpers/audience-data.ts'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { recording } from '../helpers/recording-store.ts'
import { tempDir } from '../helpers/temp.ts'
import { waitFor } from '../helpers/wait-for.ts'

/**
 * Retention per table (SLUICE_RETENTION_*, docs/scaling.md): the migration step gives each table
 * that grows with traffic the TTL its setting asks for, changes it only when the setting changed,
 * and takes it away again when the setting is unset; rows older than it are gone once the engine
 * has merged. On chdb (embedded) and on the ClickHouse stand-in (distributed).
 */
const DAY = 86_400_000
const NOW = Date.now()
const APP = 'retention-app'

/** What the settings of this test ask for, through the configuration as a deployment sets it. */
const SETTINGS = {
  SLUICE_RETENTION_EVENTS_DAYS: '30',
  SLUICE_RETENTION_SESSIONS_DAYS: '30',
  SLUICE_RETENTION_ROLLUP_DAYS: '90',
  SLUICE_RETENTION_PROFILE_CHANGES_DAYS: '30',
  SLUICE_RETENTION_PUSH_DELIVERIES_DAYS: '30',
  SLUICE_RETENTION_UPLOAD_RECEIPTS_DAYS: '7',
}
const retentionOf = (env: Record<string, string>): Retention =>
  migrateOptions(loadConfig({ ...env, SLUICE_DATA_DIR: '/nonexistent' })).retention ?? {}

/** A row of each retained table, `ageDays` old by the time its retention counts from. */
function rowsAged(ageDays: number, tag: string): Record<RetainedTableName, object[]> {
  const at = engineTime(NOW - ageDays * DAY)
  return {
    events: [
      { app_id: APP, uuid: `e-${tag}`, event_name: 'Buy', event_time: at, received_at: at, source: 'server' },
    ],
    sessions: [{ app_id: APP, session_uuid: `s-${tag}`, install_uuid: `i-${tag}`, started_at: at }],
    // Filled by the events' and sessions' views.
    query_rollup: [],
    query_session_hours: [],
    profile_changes: [
      {
        profiledb_id: 1,
        org_id: 1,
        app_id: APP,
        customer_id: `c-${tag}`,
        change_id: `ch-${tag}`,
        at,
        applied_at: at,
      },
    ],
    upload_receipts: [
      { transaction_id: `tx-${tag}`, org_id: 1, app_id: APP, received_at: at, processed_at: at },
    ],
    rejected_lines: [{ transaction_id: `tx-${tag}`, org_id: 1, app_id: APP, line: 1, received_at: at }],
    push_deliveries: [
      {
        app_id: APP,
        request_id: `r-${tag}`,
        generation: 1,
        install_uuid: `i-${tag}`,
        planned_at: at,
        version: 1,
      },
    ],
  }
}

async function insertRows(store: Store, rows: Record<RetainedTableName, object[]>): Promise<void> {
  for (const [table, list] of Object.entries(rows)) if (list.length > 0) await store.insert(table, list)
}

/** The TABLE-level TTL clause of a table as the engine shows it (SHOW CREATE TABLE), or ''. */
async function ttlOf(store: Store, table: string): Promise<string> {
  const [row] = await store.query<{ statement: string }>(`SHOW CREATE TABLE ${table}`)
  return /\nTTL (.*)/.exec(row?.statement ?? '')?.[1]?.trim() ?? ''
}

/** The time column each table's rows are aged by, to count the old ones. */
const AGED_BY: Record<RetainedTableName, string> = {
  events: 'event_time',
  sessions: 'started_at',
  query_rollup: 'hour',
  query_session_hours: 'hour',
  profile_changes: 'at',
  upload_receipts: 'received_at',
  rejected_lines: 'received_at',
  push_deliveries: 'planned_at',
}

async function countsByAge(store: Store, table: RetainedTableName, days: number) {
  const [row] = await store.query<{ old: string; recent: string }>(
    `SELECT countIf(${AGED_BY[table]} < now() - INTERVAL {days:UInt32} DAY) AS old,
            countIf(${AGED_BY[table]} >= now() - INTERVAL {days:UInt32} DAY) AS recent
     FROM ${table}`,
    { days },
  )
  return { old: Number(row?.old), recent: Number(row?.recent) }
}

describe('retention per table on chdb (embedded mode)', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  let store: ChdbStore
  beforeAll(async () => {
    dir = await tempDir('retention')
    store = await ChdbStore.open(dir.path)
  })
  afterAll(async () => {
    await store?.close()
    await dir?.cleanup()
  })

  it('sets each TTL from its setting, drops older rows at the merge, leaves it alone while unchanged, and takes it away when unset', async () => {
    // Defaults: no TTL is touched; the receipts keep their migration's 30 days.
    const first = await migrate(store, undefined, { retention: retentionOf({}) })
    expect(first.retention).toEqual([])
    expect(await ttlOf(store, 'events')).toBe('')
    expect(await ttlOf(store, 'upload_receipts')).toMatch(/^toDateTime\(received_at\) \+ toIntervalDay\(30\)/)

    // Rows from before the settings (a year and a half, and 20 days old) and recent ones.
    await insertRows(store, rowsAged(400, 'before-old'))
    await insertRows(store, rowsAged(20, 'before-20d'))
    await insertRows(store, rowsAged(1, 'before-new'))
    const kept: Record<RetainedTableName, number> = {
      events: 30,
      sessions: 30,
      query_rollup: 90,
      query_session_hours: 90,
      profile_changes: 30,
      upload_receipts: 7,
      rejected_lines: 7,
      push_deliveries: 30,
    }
    // Each table holds rows older than its retention to come, and younger ones.
    const counted = new Map<RetainedTableName, { old: number; recent: number }>()
    for (const [table, days] of Object.entries(kept) as [RetainedTableName, number][]) {
      const counts = await countsByAge(store, table, days)
      expect(counts.old, `${table}: old rows`).toBeGreaterThan(0)
      expect(counts.recent, `${table}: recent rows`).toBeGreaterThan(0)
      counted.set(table, counts)
    }

    const set = recording(store)
    const applied = await migrate(set.store, undefined, { retention: retentionOf(SETTINGS) })
    expect(applied.applied).toEqual([])
    expect(applied.retention).toEqual([
      { table: 'events', days: 30 },
      { table: 'sessions', days: 30 },
      { table: 'query_rollup', days: 90 },
      { table: 'query_session_hours', days: 90 },
      { table: 'profile_changes', days: 30 },
      { table: 'upload_receipts', days: 7 },
      { table: 'rejected_lines', days: 7 },
      { table: 'push_deliveries', days: 30 },
    ])
    expect(set.commands.filter((c) => c.startsWith('ALTER'))).toEqual([
      'ALTER TABLE events MODIFY TTL toDateTime(event_time) + INTERVAL 30 DAY',
      'ALTER TABLE sessions MODIFY TTL toDateTime(started_at) + INTERVAL 30 DAY',
      'ALTER TABLE query_rollup MODIFY TTL hour + INTERVAL 90 DAY',
      'ALTER TABLE query_session_hours MODIFY TTL hour + INTERVAL 90 DAY',
      'ALTER TABLE profile_changes MODIFY TTL toDateTime(at) + INTERVAL 30 DAY',
      'ALTER TABLE upload_receipts MODIFY TTL toDateTime(received_at) + INTERVAL 7 DAY',
      'ALTER TABLE rejected_lines MODIFY TTL toDateTime(received_at) + INTERVAL 7 DAY',
      'ALTER TABLE push_deliveries MODIFY TTL toDateTime(planned_at) + INTERVAL 30 DAY',
    ])
    // As the engine shows the tables.
    expect(await ttlOf(store, 'events')).toMatch(/^toDateTime\(event_time\) \+ toIntervalDay\(30\)/)
    expect(await ttlOf(store, 'query_rollup')).toMatch(/^hour \+ toIntervalDay\(90\)/)
    expect(await ttlOf(store, 'upload_receipts')).toMatch(/^toDateTime\(received_at\) \+ toIntervalDay\(7\)/)
    const engines = await store.query<{ name: string; engine_full: string }>(
      `SELECT name, engine_full FROM system.tables WHERE database = currentDatabase()
       AND name IN ('sessions', 'profile_changes', 'push_deliveries', 'rejected_lines') ORDER BY name`,
    )
    expect(
      engines.map((t) => [t.name, /TTL (\S+) \+ toIntervalDay\((\d+)\)/.exec(t.engine_full)?.slice(1)]),
    ).toEqual([
      ['profile_changes', ['toDateTime(at)', '30']],
      ['push_deliveries', ['toDateTime(planned_at)', '30']],
      ['rejected_lines', ['toDateTime(received_at)', '7']],
      ['sessions', ['toDateTime(started_at)', '30']],
    ])

    // Rows written after the TTL is set expire the same way.
    await insertRows(store, rowsAged(500, 'after-old'))
    for (const [table, days] of Object.entries(kept) as [RetainedTableName, number][]) {
      const after = await waitFor(
        async () => {
          await store.command(`OPTIMIZE TABLE ${table} FINAL`)
          return countsByAge(store, table, days)
        },
        (c) => c.old === 0,
        { timeoutMs: 30_000, intervalMs: 250, what: `${table}'s rows older than ${days} days to go` },
      )
      // What is younger than the retention stays: the recent rows (and the receipts' 20-day-old
      // ones only where they are kept longer than 20 days).
      expect(after.recent, `${table}: rows kept`).toBe(counted.get(table)?.recent)
    }
    const [events] = await store.query<{ uuids: string[] }>(
      'SELECT groupArray(uuid) AS uuids FROM (SELECT uuid FROM events ORDER BY uuid)',
    )
    expect(events?.uuids).toEqual(['e-before-20d', 'e-before-new'])

    // The same settings again (every start of every process): nothing is altered.
    const again = recording(store)
    expect((await migrate(again.store, undefined, { retention: retentionOf(SETTINGS) })).retention).toEqual(
      [],
    )
    expect(again.commands.filter((c) => c.startsWith('ALTER'))).toEqual([])

    // Unset again: no TTL, and the receipts back to their migration's 30 days.
    const unset = recording(store)
    const removed = await migrate(unset.store, undefined, { retention: retentionOf({}) })
    expect(removed.retention).toEqual([
      { table: 'events', days: null },
      { table: 'sessions', days: null },
      { table: 'query_rollup', days: null },
      { table: 'query_session_hours', days: null },
      { table: 'profile_changes', days: null },
      { table: 'upload_receipts', days: 30 },
      { table: 'rejected_lines', days: 30 },
      { table: 'push_deliveries', days: null },
    ])
    expect(unset.commands.filter((c) => c.startsWith('ALTER'))).toContain('ALTER TABLE events REMOVE TTL')
    for (const table of [
      'events',
      'sessions',
      'query_rollup',
      'query_session_hours',
      'profile_changes',
      'push_deliveries',
    ])
      expect(await ttlOf(store, table), table).toBe('')
    expect(await ttlOf(store, 'rejected_lines')).toMatch(/^toDateTime\(received_at\) \+ toIntervalDay\(30\)/)
    // A row older than the removed TTL now stays through a merge.
    await insertRows(store, rowsAged(600, 'unset-old'))
    await store.command('OPTIMIZE TABLE events FINAL')
    const [kept600] = await store.query<{ n: string }>(
      "SELECT count() AS n FROM events WHERE uuid = 'e-unset-old'",
    )
    expect(Number(kept600?.n)).toBe(1)
  }, 120_000)

  it('refuses a retention that is not a whole number of days, in the configuration and in the step', async () => {
    for (const bad of ['0', '-3', '1.5', '30 DAY', '30; DROP TABLE events', '36501'])
      expect(() => loadConfig({ SLUICE_RETENTION_EVENTS_DAYS: bad }), bad).toThrow(
        /SLUICE_RETENTION_EVENTS_DAYS/,
      )
    const ttl = await ttlOf(store, 'events')
    await expect(migrate(store, undefined, { retention: { events: 2.5 } })).rejects.toThrow(
      /retention of events: 2.5 is not a whole number of days/,
    )
    expect(await ttlOf(store, 'events')).toBe(ttl)
  })
})

describe('retention per table on the ClickHouse stand-in (distributed mode)', () => {
  it('sets and removes the TTL through the server store', async () => {
    const env = distributedEnv('retention')
    const server = await ClickHouseStore.open({
      url: env.CLICKHOUSE_URL,
      username: env.CLICKHOUSE_USER,
      password: env.CLICKHOUSE_PASSWORD,
      database: env.CLICKHOUSE_DATABASE,
    })
    try {
      const set = await migrate(server, undefined, {
        retention: retentionOf({ SLUICE_RETENTION_EVENTS_DAYS: '395' }),
      })
      expect(set.retention).toEqual([{ table: 'events', days: 395 }])
      expect(await ttlOf(server, 'events')).toMatch(/^toDateTime\(event_time\) \+ toIntervalDay\(395\)/)
      const recorded = await server.query<{ table_name: string; days: number }>(
        'SELECT table_name, days FROM table_retention FINAL',
      )
      expect(recorded).toEqual([{ table_name: 'events', days: 395 }])
      expect((await migrate(server, undefined, { retention: retentionOf({}) })).retention).toEqual([
        { table: 'events', days: null },
      ])
      expect(await ttlOf(server, 'events')).toBe('')
    } finally {
      await server.command(`DROP DATABASE IF EXISTS ${env.CLICKHOUSE_DATABASE}`)
      await server.close()
    }
  }, 120_000)
})
