import { describe, expect, it } from 'vitest'
import { ClusterCatalog, clusterStatements } from '../../pipelines/connectors/store/cluster-ddl.ts'
import { clusterMigrations, loadMigrations } from '../../pipelines/connectors/store/migrations.ts'
import {
  RETAINED_TABLE_NAMES,
  retentionStatement,
  wantedDays,
} from '../../pipelines/connectors/store/retention.ts'
import { CLUSTER_LAYOUT } from '../../schemas/clickhouse/cluster-layout.ts'
import { loadConfig } from '../../services/config.ts'
import { retentionSettings } from '../../services/retention-config.ts'

const target = { cluster: 'c1', database: 'db' }

describe('retention statements', () => {
  it('give a TTL of whole days from the table’s time column, or take it away', () => {
    expect(retentionStatement('events', 30)).toBe(
      'ALTER TABLE events MODIFY TTL toDateTime(event_time) + INTERVAL 30 DAY',
    )
    expect(retentionStatement('query_rollup', 400)).toBe(
      'ALTER TABLE query_rollup MODIFY TTL hour + INTERVAL 400 DAY',
    )
    expect(retentionStatement('sessions', 0)).toBe('ALTER TABLE sessions REMOVE TTL')
    for (const bad of [1.5, -1, Number.NaN, 36_501, Number.POSITIVE_INFINITY])
      expect(() => retentionStatement('events', bad), String(bad)).toThrow(/not a whole number of days/)
  })

  it('keep a table’s migration TTL when its setting is unset, and none for the others', () => {
    expect(wantedDays({}, 'upload_receipts')).toBe(30)
    expect(wantedDays({}, 'rejected_lines')).toBe(30)
    expect(wantedDays({}, 'events')).toBe(0)
    expect(wantedDays({ events: 395 }, 'events')).toBe(395)
    expect(() => wantedDays({ events: 0.5 }, 'events')).toThrow(/retention of events/)
  })

  it('take their cluster form on the shards’ local tables, never on the Distributed ones', async () => {
    const catalog = new ClusterCatalog()
    clusterMigrations(await loadMigrations(), target, catalog)
    for (const table of RETAINED_TABLE_NAMES) {
      expect(CLUSTER_LAYOUT[table]?.placement ?? 'sharded', table).toBe('sharded')
      expect(clusterStatements([retentionStatement(table, 30)], target, catalog)).toEqual([
        retentionStatement(table, 30).replace(`TABLE ${table} `, `TABLE ${table}_local ON CLUSTER c1 `),
      ])
      expect(clusterStatements([retentionStatement(table, 0)], target, catalog)).toEqual([
        `ALTER TABLE ${table}_local ON CLUSTER c1 REMOVE TTL`,
      ])
    }
  })

  it('come from the SLUICE_RETENTION_* settings, one for the receipts and their rejected lines', () => {
    expect(retentionSettings(loadConfig({}))).toEqual({
      events: undefined,
      sessions: undefined,
      query_rollup: undefined,
      query_session_hours: undefined,
      profile_changes: undefined,
      push_deliveries: undefined,
      upload_receipts: 30,
      rejected_lines: 30,
    })
    const set = loadConfig({
      SLUICE_RETENTION_EVENTS_DAYS: '400',
      SLUICE_RETENTION_ROLLUP_DAYS: '800',
      SLUICE_RETENTION_UPLOAD_RECEIPTS_DAYS: '3',
    })
    expect(retentionSettings(set)).toMatchObject({
      events: 400,
      query_rollup: 800,
      query_session_hours: 800,
      upload_receipts: 3,
      rejected_lines: 3,
      sessions: undefined,
    })
  })
})
