import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { ClusterCatalog, clusterStatements } from '../../pipelines/connectors/store/cluster-ddl.ts'
import {
  CLUSTER_GOLDEN_DIR,
  clusterGoldenFiles,
  clusterMigrations,
  loadMigrations,
  splitStatements,
  type Migration,
} from '../../pipelines/connectors/store/migrations.ts'
import { CLUSTER_LAYOUT } from '../../schemas/clickhouse/cluster-layout.ts'

const REGENERATE =
  'run `npm run golden:cluster-ddl`, read the diff (it is what a cluster will run) and commit it'
const target = { cluster: 'c1', database: 'db' }
const cluster = (sql: string, catalog = new ClusterCatalog()) =>
  clusterStatements(splitStatements(sql), target, catalog)

describe('cluster DDL golden files', () => {
  it('hold the cluster DDL of every migration, as generated now', async () => {
    const expected = clusterGoldenFiles(await loadMigrations())
    const present = new Set((await readdir(CLUSTER_GOLDEN_DIR)).filter((f) => f.endsWith('.sql')))
    for (const [name, text] of expected) {
      expect(present.has(name), `no golden cluster DDL for migration ${name}: ${REGENERATE}`).toBe(true)
      const golden = await readFile(join(CLUSTER_GOLDEN_DIR, name), 'utf8')
      expect(golden, `the cluster DDL of ${name} changed: ${REGENERATE}`).toBe(text)
    }
    const stale = [...present].filter((name) => !expected.has(name))
    expect(stale, `golden files of no migration: ${REGENERATE}`).toEqual([])
  })

  it('place every table of the migrations: sharded tables get a local replicated table and a Distributed one', async () => {
    const [golden] = [clusterGoldenFiles(await loadMigrations())]
    const all = [...golden.values()].join('\n')
    for (const [table, placement] of Object.entries(CLUSTER_LAYOUT)) {
      if (table === 'schema_migrations' || table === 'event_uuids') continue
      if (placement.placement === 'sharded') {
        expect(all).toContain(`CREATE TABLE IF NOT EXISTS ${table}_local ON CLUSTER sluice_cluster`)
        expect(all).toContain(
          `ENGINE = Distributed('sluice_cluster', 'sluice', '${table}_local', cityHash64(${placement.by.join(', ')}))`,
        )
        expect(all).toMatch(
          new RegExp(
            `Replicated\\w*MergeTree\\('/clickhouse/tables/\\{shard\\}/\\{database\\}/${table}_local', '\\{replica\\}'`,
          ),
        )
      } else {
        expect(all).toContain(`CREATE TABLE IF NOT EXISTS ${table} ON CLUSTER sluice_cluster`)
        expect(all).toContain(`('/clickhouse/tables/all/{database}/${table}', '{replica}'`)
      }
    }
    // No single-node MergeTree engine is left, and every DDL statement runs on the whole cluster.
    for (const text of golden.values()) {
      for (const statement of text.split(/;\n/).map((s) => s.replace(/^(--.*\n|\n)*/g, '').trim())) {
        if (statement === '' || statement.startsWith('INSERT')) continue
        expect(statement).toContain('ON CLUSTER sluice_cluster')
        expect(statement).not.toMatch(/ENGINE = (Replacing)?MergeTree\b/)
      }
    }
  })
})

describe('clusterStatements', () => {
  it('keeps engine arguments after the Keeper path and replica, and the rest of the statement as written', () => {
    const [local, distributed] = cluster(`CREATE TABLE IF NOT EXISTS devices
      (app_id String, install_uuid String, note String DEFAULT 'ENGINE = MergeTree', version UInt64)
      ENGINE = ReplacingMergeTree(version)
      ORDER BY (app_id, install_uuid)
      SETTINGS index_granularity = 256`)
    expect(local).toBe(`CREATE TABLE IF NOT EXISTS devices_local ON CLUSTER c1
      (app_id String, install_uuid String, note String DEFAULT 'ENGINE = MergeTree', version UInt64)
      ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/devices_local', '{replica}', version)
      ORDER BY (app_id, install_uuid)
      SETTINGS index_granularity = 256`)
    expect(distributed).toBe(
      `CREATE TABLE IF NOT EXISTS devices ON CLUSTER c1 AS devices_local\n` +
        `ENGINE = Distributed('c1', 'db', 'devices_local', cityHash64(app_id, install_uuid))`,
    )
  })

  it('shards a table the layout does not know by its whole ORDER BY key', () => {
    const [, distributed] = cluster(
      `CREATE TABLE IF NOT EXISTS daily_rollup (app_id String, day Date, n UInt64)
       ENGINE = SummingMergeTree ORDER BY (app_id, toStartOfMonth(day), day) TTL day + INTERVAL 1 YEAR`,
    )
    expect(distributed).toContain(`cityHash64(app_id, toStartOfMonth(day), day)`)
  })

  it('writes a view over a sharded table locally when its target is sharded alike, else through the Distributed target', () => {
    const catalog = new ClusterCatalog()
    cluster(
      `CREATE TABLE events (app_id String, uuid String, event_name String) ENGINE = MergeTree ORDER BY (app_id, event_name, uuid);
       CREATE TABLE event_uuid_index (app_id String, uuid String) ENGINE = ReplacingMergeTree ORDER BY (app_id, uuid);
       CREATE TABLE per_name (app_id String, event_name String, n UInt64) ENGINE = SummingMergeTree ORDER BY (app_id, event_name)`,
      catalog,
    )
    expect(
      cluster(
        `CREATE MATERIALIZED VIEW i_mv TO event_uuid_index AS SELECT app_id, uuid FROM events`,
        catalog,
      ),
    ).toEqual([
      `CREATE MATERIALIZED VIEW i_mv ON CLUSTER c1 TO event_uuid_index_local AS SELECT app_id, uuid FROM events_local`,
    ])
    expect(
      cluster(
        `CREATE MATERIALIZED VIEW n_mv TO per_name AS SELECT app_id, event_name, count() AS n FROM events GROUP BY app_id, event_name`,
        catalog,
      ),
    ).toEqual([
      `CREATE MATERIALIZED VIEW n_mv ON CLUSTER c1 TO per_name AS SELECT app_id, event_name, count() AS n FROM events_local GROUP BY app_id, event_name`,
    ])
  })

  it('alters the Distributed table too for column changes only, and drops both tables of a sharded one', () => {
    const catalog = new ClusterCatalog()
    cluster(
      `CREATE TABLE devices (app_id String, install_uuid String) ENGINE = MergeTree ORDER BY (app_id, install_uuid)`,
      catalog,
    )
    expect(
      cluster(
        `ALTER TABLE devices ADD COLUMN IF NOT EXISTS x String DEFAULT 'a, b', ADD INDEX i x TYPE minmax GRANULARITY 1 SETTINGS mutations_sync = 2`,
        catalog,
      ),
    ).toEqual([
      `ALTER TABLE devices_local ON CLUSTER c1 ADD COLUMN IF NOT EXISTS x String DEFAULT 'a, b', ADD INDEX i x TYPE minmax GRANULARITY 1 SETTINGS mutations_sync = 2`,
      `ALTER TABLE devices ON CLUSTER c1 ADD COLUMN IF NOT EXISTS x String DEFAULT 'a, b'`,
    ])
    expect(cluster(`ALTER TABLE devices MODIFY SETTING merge_selector_base = 20`, catalog)).toEqual([
      `ALTER TABLE devices_local ON CLUSTER c1 MODIFY SETTING merge_selector_base = 20`,
    ])
    expect(cluster(`DROP TABLE IF EXISTS devices`, catalog)).toEqual([
      `DROP TABLE IF EXISTS devices ON CLUSTER c1 SYNC`,
      `DROP TABLE IF EXISTS devices_local ON CLUSTER c1 SYNC`,
    ])
    // Dropped: a table of that name created again is placed afresh.
    expect(cluster(`ALTER TABLE devices MODIFY SETTING merge_selector_base = 20`, catalog)).toEqual([
      `ALTER TABLE devices ON CLUSTER c1 MODIFY SETTING merge_selector_base = 20`,
    ])
  })

  it('keeps inserts as written (they go through the Distributed tables) and runs other tables and views on every node', () => {
    const insert = `INSERT INTO devices (app_id) SELECT app_id FROM devices FINAL`
    expect(cluster(insert)).toEqual([insert])
    expect(cluster(`CREATE TABLE IF NOT EXISTS ingest (a String) ENGINE = Null`)).toEqual([
      `CREATE TABLE IF NOT EXISTS ingest ON CLUSTER c1 (a String) ENGINE = Null`,
    ])
    expect(cluster(`CREATE VIEW IF NOT EXISTS v AS SELECT 1`)).toEqual([
      `CREATE VIEW IF NOT EXISTS v ON CLUSTER c1 AS SELECT 1`,
    ])
  })

  it('refuses what it has no cluster form for, naming the migration', () => {
    const migration = (sql: string): Migration => ({
      version: 99,
      name: '099_new',
      checksum: '',
      accepted: [],
      statements: splitStatements(sql),
    })
    expect(() => clusterMigrations([migration('RENAME TABLE a TO b')], target)).toThrow(
      /migration 099_new: no cluster form for this statement/,
    )
    expect(() =>
      clusterMigrations(
        [migration('CREATE MATERIALIZED VIEW v ENGINE = MergeTree ORDER BY a AS SELECT a FROM t')],
        target,
      ),
    ).toThrow(/TO a table of its own/)
    expect(() =>
      clusterMigrations(
        [migration('CREATE TABLE t (a UInt8) ENGINE = ReplicatedMergeTree ORDER BY a')],
        target,
      ),
    ).toThrow(/single-node engine/)
    expect(() =>
      clusterMigrations([migration('CREATE TABLE db2.t (a UInt8) ENGINE = MergeTree ORDER BY a')], target),
    ).toThrow(/unqualified/)
    expect(() =>
      clusterMigrations([migration('CREATE TABLE t (a UInt8) ENGINE = MergeTree ORDER BY tuple()')], target),
    ).toThrow(/ORDER BY key to shard by/)
  })

  it('refuses a layout whose sharding key names a column the table does not have', () => {
    const catalog = new ClusterCatalog({ t: { placement: 'sharded', by: ['app_id', 'nope'], why: 'test' } })
    expect(() =>
      cluster(`CREATE TABLE t (app_id String) ENGINE = MergeTree ORDER BY app_id`, catalog),
    ).toThrow(/sharding key of t names nope/)
  })
})
