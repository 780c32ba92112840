import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { ClickHouseStore } from '../../pipelines/connectors/store/clickhouse-store.ts'
import {
  clusterGoldenFiles,
  clusterMigrations,
  GOLDEN_CLUSTER,
  loadMigrations,
  migrate,
  RETENTION_GOLDEN,
  splitStatements,
} from '../../pipelines/connectors/store/migrations.ts'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { recording } from '../helpers/recording-store.ts'
import { tempDir } from '../helpers/temp.ts'

describe('migrations with CLICKHOUSE_CLUSTER unset', () => {
  let chdb: ChdbStore
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const dir = await tempDir('cluster-ddl')
    cleanup = dir.cleanup
    chdb = await ChdbStore.open(dir.path)
  })
  afterAll(async () => {
    await chdb.close()
    await cleanup()
  })

  it('run every statement of the files as written, and nothing else, on the embedded engine', async () => {
    const migrations = await loadMigrations()
    const { store, commands } = recording(chdb)
    const result = await migrate(store)
    expect(result.applied).toEqual(migrations.map((m) => m.version))
    expect(commands.slice(1)).toEqual(migrations.flatMap((m) => m.statements))
    expect(commands[0]).toMatch(/^CREATE TABLE IF NOT EXISTS schema_migrations\s/)
    expect(commands[0]).not.toContain('ON CLUSTER')
    const [events] = await chdb.query<{ engine: string }>(
      "SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'events'",
    )
    expect(events?.engine).toBe('MergeTree')
    const locals = await chdb.query<{ name: string }>(
      "SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE '%\\_local'",
    )
    expect(locals).toEqual([])
  })

  it('apply cleanly on the ClickHouse server stand-in, as single-node tables', async () => {
    const env = distributedEnv('clusterddl')
    const server = await ClickHouseStore.open({
      url: env.CLICKHOUSE_URL,
      username: env.CLICKHOUSE_USER,
      password: env.CLICKHOUSE_PASSWORD,
      database: env.CLICKHOUSE_DATABASE,
    })
    try {
      const { store, commands } = recording(server)
      const migrations = await loadMigrations()
      expect((await migrate(store)).applied).toEqual(migrations.map((m) => m.version))
      expect(commands.slice(1)).toEqual(migrations.flatMap((m) => m.statements))
      const tables = await server.query<{ name: string; engine: string }>(
        `SELECT name, engine FROM system.tables WHERE database = {db:String}
         AND name IN ('events', 'devices', 'orgs') ORDER BY name`,
        { db: env.CLICKHOUSE_DATABASE },
      )
      expect(tables).toEqual([
        { name: 'devices', engine: 'ReplacingMergeTree' },
        { name: 'events', engine: 'MergeTree' },
        { name: 'orgs', engine: 'ReplacingMergeTree' },
      ])
    } finally {
      await server.command(`DROP DATABASE IF EXISTS ${env.CLICKHOUSE_DATABASE}`)
      await server.close()
    }
  })

  it("gives cluster DDL that ClickHouse's own parser reads as the statements meant", async () => {
    const statements = clusterMigrations(await loadMigrations(), GOLDEN_CLUSTER).flatMap((m) => m.statements)
    let replicated = 0
    let distributed = 0
    for (const sql of statements) {
      // The engine parses and prints the statement back: a syntax error fails here.
      const [row] = await chdb.query<{ q: string }>('SELECT formatQuerySingleLine({sql:String}) AS q', {
        sql,
      })
      const printed = row?.q ?? ''
      if (sql.startsWith('INSERT')) {
        expect(printed).not.toContain('ON CLUSTER')
        continue
      }
      expect(printed).toContain('ON CLUSTER sluice_cluster')
      if (
        /ENGINE = Replicated\w*MergeTree\('\/clickhouse\/tables\/(\{shard\}|all)\/\{database\}\/\w+', '\{replica\}'/.test(
          printed,
        )
      )
        replicated++
      if (/ENGINE = Distributed\('sluice_cluster', 'sluice', '\w+_local', cityHash64\(/.test(printed))
        distributed++
    }
    // Each *MergeTree table of the migrations became a replicated one, and each sharded one also a
    // Distributed one, as the engine reads them.
    expect(replicated).toBe(statements.filter((s) => /^CREATE TABLE[^;]*MergeTree/.test(s)).length)
    expect(distributed).toBe(
      statements.filter((s) => /^CREATE TABLE[^;]*ENGINE = Distributed/.test(s)).length,
    )
    expect(distributed).toBeGreaterThan(10)
  })

  it("gives retention statements on a cluster that ClickHouse's parser reads as ALTERs of the local tables", async () => {
    const golden = clusterGoldenFiles(await loadMigrations()).get(RETENTION_GOLDEN) ?? ''
    const statements = splitStatements(golden)
    expect(statements.length).toBeGreaterThan(10)
    // The engine prints an ALTER's command in brackets.
    for (const sql of statements) {
      const [row] = await chdb.query<{ q: string }>('SELECT formatQuerySingleLine({sql:String}) AS q', {
        sql,
      })
      expect(row?.q).toMatch(
        /^ALTER TABLE \w+_local ON CLUSTER sluice_cluster \(?(REMOVE TTL|MODIFY TTL \S+ \+ (toIntervalDay\(\d+\)|INTERVAL \d+ DAY))\)?$/,
      )
    }
  })
})
