import { createHash } from 'node:crypto'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { tempDir } from '../helpers/temp.ts'

/**
 * Roles started together migrate at once. One process can get ahead of another so far that a
 * statement of the other fails (here, as 006/007 do, 002 copies a table that 003 drops): the one
 * behind must take the other's recorded work instead of failing its start.
 */
describe('two processes migrating one database at once', () => {
  let dir: { path: string; cleanup: () => Promise<void> }
  let store: ChdbStore
  beforeAll(async () => {
    dir = await tempDir('migrate-race')
    store = await ChdbStore.open(join(dir.path, 'ch'), 'race')
  })
  afterAll(async () => {
    await store.close()
    await dir.cleanup()
  })

  it('the process behind skips what the process ahead recorded, and both end migrated', async () => {
    const migrations = join(dir.path, 'migrations')
    await mkdir(migrations)
    await writeFile(
      join(migrations, '001_src.sql'),
      'CREATE TABLE IF NOT EXISTS src (x UInt8) ENGINE = MergeTree ORDER BY x;\nINSERT INTO src VALUES (7);\n',
    )
    await writeFile(
      join(migrations, '002_copy.sql'),
      'CREATE TABLE IF NOT EXISTS dst (x UInt8) ENGINE = ReplacingMergeTree ORDER BY x;\nINSERT INTO dst SELECT x FROM src;\n',
    )
    await writeFile(join(migrations, '003_drop.sql'), 'DROP TABLE IF EXISTS src;\n')

    const ahead = migrate(store, migrations)
    // The process behind reaches 002's copy only once the process ahead has finished, 003 included.
    const behind: Store = {
      ...store,
      kind: store.kind,
      command: async (sql, params) => {
        if (sql.includes('FROM src')) await ahead
        return store.command(sql, params)
      },
      query: (sql, params) => store.query(sql, params),
      insert: (table, rows, options) => store.insert(table, rows, options),
      queryStream: (sql, params, format) => store.queryStream(sql, params, format),
      ping: () => store.ping(),
      close: () => store.close(),
    }
    const [a, b] = await Promise.all([ahead, migrate(behind, migrations)])
    expect(a.applied).toEqual([1, 2, 3])
    expect(b.skipped).toContain(2)
    expect(await store.query('SELECT x FROM dst FINAL')).toEqual([{ x: 7 }])
    const recorded = await store.query<{ version: number }>(
      'SELECT DISTINCT version FROM schema_migrations ORDER BY version',
    )
    expect(recorded.map((r) => Number(r.version))).toEqual([1, 2, 3])
  })
  it('a comment edited after a migration was applied does not stop a start; a statement edited does', async () => {
    const migrations = join(dir.path, 'edited')
    await mkdir(migrations)
    const file = join(migrations, '001_t.sql')
    const before =
      '-- first words\nCREATE TABLE IF NOT EXISTS edited_t (x UInt8) ENGINE = MergeTree ORDER BY x;\n'
    await writeFile(file, before)
    // A database migrated by a runner that recorded the whole file's checksum, comments included.
    await store.command(`CREATE TABLE IF NOT EXISTS schema_migrations
      (version UInt32, name String, checksum String, applied_at DateTime64(3, 'UTC'))
      ENGINE = ReplacingMergeTree ORDER BY version`)
    await store.command('TRUNCATE TABLE schema_migrations')
    await store.command(before.split('\n')[1]!.replace(/;$/, ''))
    await store.insert('schema_migrations', [
      {
        version: 1,
        name: '001_t',
        checksum: createHash('sha256').update(before).digest('hex'),
        applied_at: Date.now(),
      },
    ])
    expect(await migrate(store, migrations)).toEqual({ applied: [], skipped: [1] })

    await writeFile(file, before.replace('first words', 'other words'))
    await store.command('TRUNCATE TABLE schema_migrations')
    expect(await migrate(store, migrations)).toEqual({ applied: [1], skipped: [] })
    await writeFile(file, before.replace('-- first words', '-- reworded'))
    expect(await migrate(store, migrations)).toEqual({ applied: [], skipped: [1] })

    await writeFile(file, before.replace('x UInt8', 'x UInt16'))
    await expect(migrate(store, migrations)).rejects.toThrow(/001_t was changed after it was applied/)
  })
})
