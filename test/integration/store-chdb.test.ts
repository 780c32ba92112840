import { readdir } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { loadMigrations, migrate } from '../../pipelines/connectors/store/migrations.ts'
import { stringSet } from '../../pipelines/connectors/store/string-set.ts'
import { RowBinaryWriter } from '../../pipelines/events/row-binary.ts'
import { insertsThroughASelect } from '../helpers/insert-select-case.ts'
import { piecesOf } from '../helpers/row-pieces.ts'
import { tempDir } from '../helpers/temp.ts'

// 36 characters, as event uuids are: the size of a set's values matters to the engine's plan.
const uuidLike = (i: number) => `6f1c9a2e-4000-8000-${String(i).padStart(12, '0')}`

describe('ChdbStore (embedded engine)', () => {
  let store: ChdbStore
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const dir = await tempDir('chdb')
    cleanup = dir.cleanup
    store = await ChdbStore.open(dir.path)
  })
  afterAll(async () => {
    await store.close()
    await cleanup()
  })

  it('applies migrations once and records them', async () => {
    const all = (await loadMigrations()).map((m) => m.version)
    const first = await migrate(store)
    expect(first.applied).toEqual(all)
    const second = await migrate(store)
    expect(second).toEqual({ applied: [], skipped: all })
    const recorded = await store.query<{ version: number; name: string }>(
      'SELECT version, name FROM schema_migrations FINAL ORDER BY version',
    )
    expect(recorded.map((r) => r.version)).toEqual(all)
    expect(recorded[0]?.name).toBe('001_control')
    const tables = await store.query<{ name: string }>(
      "SELECT name FROM system.tables WHERE database = currentDatabase() AND name IN ('orgs','apps','api_keys','profile_dbs') ORDER BY name",
    )
    expect(tables.map((t) => t.name)).toEqual(['api_keys', 'apps', 'orgs', 'profile_dbs'])
    const [events] = await store.query<{ engine_full: string }>(
      "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'events'",
    )
    expect(events?.engine_full).toMatch(/non_replicated_deduplication_window = 1000/)
    // Migration 019: wider merges of `events` (fewer rewrites of each row).
    expect(events?.engine_full).toMatch(/merge_selector_base = 20/)
    // Migration 020: inserts of up to 64 MB written as compact parts (one write buffer, not one per column).
    expect(events?.engine_full).toMatch(/min_bytes_for_wide_part = 67108864/)
    // Migration 034: the tables an import writes a round at a time take compact parts too, and
    // vertical merges; the CSV lines are typed as the insert reads them, so import_raw is gone.
    const imports = await store.query<{ name: string; engine_full: string }>(
      "SELECT name, engine_full FROM system.tables WHERE database = currentDatabase() AND name IN ('import_rows', 'profiles', 'profile_changes', 'import_raw') ORDER BY name",
    )
    expect(imports.map((t) => t.name)).toEqual(['import_rows', 'profile_changes', 'profiles'])
    for (const t of imports) {
      // Migration 040: profiles and profile_changes wide from 32,768 rows (import_rows: compact under 64 MB).
      if (t.name === 'import_rows') expect(t.engine_full).toMatch(/min_bytes_for_wide_part = 67108864/)
      else {
        expect(t.engine_full, t.name).toMatch(/min_bytes_for_wide_part = 0\b/)
        expect(t.engine_full, t.name).toMatch(/min_rows_for_wide_part = 32768\b/)
      }
      // Merged a column at a time whatever the parts' rows and the table's columns.
      expect(t.engine_full, t.name).toMatch(/vertical_merge_algorithm_min_columns_to_activate = 1/)
      expect(t.engine_full, t.name).toMatch(/vertical_merge_algorithm_min_rows_to_activate = 1\b/)
      // Migration 037: merges of at most 4 parts (the three merging together held most of an import's memory).
      expect(t.engine_full, t.name).toMatch(/max_parts_to_merge_at_once = 4\b/)
    }
    // Staged rows dropped a part at a time when expired.
    expect(imports[0]!.engine_full).toMatch(/ttl_only_drop_parts = 1/)
    // Migration 039: a round's part of staged rows is never merged (only parts under 1 MB are),
    // so the delay of inserts starts from more parts.
    expect(imports[0]!.engine_full).toMatch(/max_bytes_to_merge_at_max_space_in_pool = 1048576\b/)
    expect(imports[0]!.engine_full).toMatch(/parts_to_delay_insert = 6000\b/)
    expect(imports[0]!.engine_full).toMatch(/parts_to_throw_insert = 10000\b/)
  })

  it('writes a round of profiles as a compact part and merges rounds into a wide one, column by column', async () => {
    // Migration 040: the engine merges vertically (one column at a time: the memory of one column's
    // buffers) only into a wide part; a round's insert stays compact (one write buffer).
    const round = (from: number) =>
      store.command(
        `INSERT INTO profiles (profiledb_id, org_id, app_id, customer_id, attributes, attribute_types, email, deleted,
                               updated_at, source_partition, source_offset, version)
         SELECT 77, 1, '', concat('wide-', toString(number)), concat('{"plan":"gold","n":', toString(number), '}'),
                map('plan', 'string', 'n', 'integer'), '', 0, now64(3), 0, number, 1
         FROM numbers({from:UInt64}, 20000)`,
        { from },
      )
    const parts = () =>
      store.query<{ name: string; rows: string; part_type: string }>(
        `SELECT name, rows, part_type FROM system.parts
         WHERE database = currentDatabase() AND table = 'profiles' AND active ORDER BY name`,
      )
    await store.command('SYSTEM STOP MERGES profiles')
    try {
      await round(0)
      await round(20000)
      expect((await parts()).map((p) => [Number(p.rows), p.part_type])).toEqual([
        [20000, 'Compact'],
        [20000, 'Compact'],
      ])
    } finally {
      await store.command('SYSTEM START MERGES profiles')
    }
    await store.command('OPTIMIZE TABLE profiles FINAL')
    expect((await parts()).map((p) => [Number(p.rows), p.part_type])).toEqual([[40000, 'Wide']])
    const [sample] = await store.query<{ attributes: string; n: string | number }>(
      `SELECT any(attributes) AS attributes, count() AS n FROM profiles FINAL
       WHERE profiledb_id = 77 AND customer_id = 'wide-39999'`,
    )
    expect({ ...sample, n: Number(sample?.n) }).toEqual({ attributes: '{"plan":"gold","n":39999}', n: 1 })
    await store.command('TRUNCATE TABLE profiles')
  })

  it.each([
    ['plain uuids', ['a-1', 'b-2', 'c-3']],
    [
      'quotes, backslashes, tabs and unicode',
      ["o'brien", 'back\\slash', 'tab\there', 'émoji 🎉', '{"json":1}'],
    ],
    ['a value with a newline (array fallback)', ['line\nbreak', 'other']],
    ['the empty string as a member', ['', 'x']],
    ['no values at all', []],
  ])('stringSet: %s selects exactly its members', async (_name, values) => {
    const set = stringSet('wanted', values)
    const candidates = [...values, 'not-a-member', '', 'line', 'break']
    const rows = await store.query<{ x: string }>(
      `SELECT x FROM (SELECT arrayJoin({candidates:Array(String)}) AS x) WHERE x IN ${set.sql} ORDER BY x`,
      { candidates, wanted: set.value },
    )
    const expected = candidates.filter((c) => values.includes(c)).sort()
    expect(rows.map((r) => r.x).sort()).toEqual(expected)
  })

  it.each([
    ['joined', (i: number) => uuidLike(i)],
    ['array fallback', (i: number) => (i === 0 ? 'line\nbreak' : uuidLike(i))],
  ])(
    'stringSet (%s): a 50,000-value set narrows a MergeTree read to exactly its members',
    async (_name, valueOf) => {
      // Past about 1 MB of constant array the engine scanned the array per row (minutes, not ms).
      await store.command('CREATE TABLE IF NOT EXISTS t_big_set (k String) ENGINE = MergeTree ORDER BY k')
      await store.command('TRUNCATE TABLE t_big_set')
      await store.command(
        "INSERT INTO t_big_set SELECT concat('6f1c9a2e-4000-8000-', leftPad(toString(number), 12, '0')) FROM numbers(200000)",
      )
      const values = Array.from({ length: 50_000 }, (_, i) => valueOf(i * 7))
      const set = stringSet('wanted', values)
      const rows = await store.query<{ n: string; top: string }>(
        `SELECT count() AS n, max(toUInt64(substring(k, 20))) AS top FROM t_big_set WHERE k IN ${set.sql}`,
        { wanted: set.value },
      )
      // Members i*7 below 200,000, minus the one replaced by a value holding a newline.
      const expected = values.filter((v) => !v.includes('\n') && Number(v.slice(19)) < 200_000).length
      expect(Number(rows[0]?.n)).toBe(expected)
      expect(Number(rows[0]?.top)).toBe(199_997)
    },
  )

  it('inserts objects and buffers and binds query parameters', async () => {
    await store.command(
      'CREATE TABLE t_rows (id UInt32, name String, tags Map(String, String)) ENGINE = MergeTree ORDER BY id',
    )
    await store.insert('t_rows', [
      { id: 1, name: "o'brien", tags: { a: '1' } },
      { id: 2, name: 'b', tags: {} },
    ])
    await store.insert('t_rows', Buffer.from('{"id":3,"name":"c","tags":{"k":"v"}}\n'))
    const rows = await store.query<{ id: number; name: string; tags: Record<string, string> }>(
      'SELECT id, name, tags FROM t_rows WHERE id >= {min:UInt32} AND name != {skip:String} ORDER BY id',
      { min: 1, skip: 'b' },
    )
    expect(rows).toEqual([
      { id: 1, name: "o'brien", tags: { a: '1' } },
      { id: 3, name: 'c', tags: { k: 'v' } },
    ])
  })

  it('inserts RowBinary rows given in pieces, through one buffer reused between pieces', async () => {
    await store.command('CREATE TABLE t_pieces (id UInt32, name String) ENGINE = MergeTree ORDER BY id')
    const w = new RowBinaryWriter()
    for (let id = 1; id <= 50; id++) {
      w.uint(id, 4)
      w.string(`name-${id}-${'x'.repeat(id)}`)
    }
    const bytes = Buffer.from(w.view())
    // Pieces of 64 bytes split rows and values: the file the engine reads holds them whole.
    const given = piecesOf(bytes, 64)
    await store.insert('t_pieces', given, {
      rowBinary: [
        ['id', 'UInt32'],
        ['name', 'String'],
      ],
    })
    expect(given.handed).toBe(Math.ceil(bytes.length / 64))
    const rows = await store.query<{ id: number; name: string }>('SELECT id, name FROM t_pieces ORDER BY id')
    expect(rows).toEqual(
      Array.from({ length: 50 }, (_, i) => ({ id: i + 1, name: `name-${i + 1}-${'x'.repeat(i + 1)}` })),
    )
    // Pieces are RowBinary only.
    await expect(store.insert('t_pieces', piecesOf(bytes, 64))).rejects.toThrow('RowBinary only')
  })

  it('reads RowBinary rows as the table columns (LowCardinality, DateTime64, Map, defaults), drops a repeated token, and removes its spool file', async () => {
    await store.command(
      `CREATE TABLE t_typed (app LowCardinality(String), at DateTime64(3, 'UTC'), attrs Map(String, String),
         n Int64, filled String DEFAULT 'default')
       ENGINE = MergeTree ORDER BY at SETTINGS non_replicated_deduplication_window = 100`,
    )
    const rowsOf = (first: number) => {
      const w = new RowBinaryWriter()
      for (let i = first; i < first + 3; i++) {
        w.string(`app-${i % 2}`)
        w.int64(1_795_300_000_000 + i)
        w.stringMap({ k: `v${i}` })
        w.int64(-i)
      }
      return Buffer.from(w.view())
    }
    const columns = [
      ['app', 'String'],
      ['at', "DateTime64(3, 'UTC')"],
      ['attrs', 'Map(String, String)'],
      ['n', 'Int64'],
    ] as const
    await store.insert('t_typed', rowsOf(1), { rowBinary: columns, dedupToken: 'typed:1-3' })
    await store.insert('t_typed', rowsOf(1), { rowBinary: columns, dedupToken: 'typed:1-3' })
    await store.insert('t_typed', rowsOf(4), { rowBinary: columns, dedupToken: 'typed:4-6' })
    const rows = await store.query<{
      app: string
      at: string
      attrs: Record<string, string>
      n: number
      filled: string
    }>(`SELECT app, toUnixTimestamp64Milli(at) AS at, attrs, n, filled FROM t_typed ORDER BY at`)
    expect(rows).toEqual(
      Array.from({ length: 6 }, (_, k) => ({
        app: `app-${(k + 1) % 2}`,
        at: 1_795_300_000_001 + k,
        attrs: { k: `v${k + 1}` },
        n: -(k + 1),
        filled: 'default',
      })),
    )
    expect(await readdir(join(store.path, 'insert-spool'))).toEqual([])
  })

  it('inserts what a SELECT makes of RowBinary rows, with query parameters, and no table in between', () =>
    insertsThroughASelect(store))

  it('drops a repeated insert with the same deduplication token, and only that one', async () => {
    await store.command(
      'CREATE TABLE t_dedup (id UInt32) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000',
    )
    await store.insert('t_dedup', [{ id: 1 }], { dedupToken: 'offsets-0-9' })
    await store.insert('t_dedup', [{ id: 1 }], { dedupToken: 'offsets-0-9' })
    await store.insert('t_dedup', [{ id: 2 }], { dedupToken: 'offsets-10-19' })
    // No token: must not inherit the previous one (settings never stick to the session), so
    // different data goes in; identical blocks are still dropped by the engine's own hash.
    await store.insert('t_dedup', [{ id: 3 }])
    await store.insert('t_dedup', [{ id: 3 }])
    const rows = await store.query<{ id: number }>('SELECT id FROM t_dedup ORDER BY id')
    expect(rows.map((r) => r.id)).toEqual([1, 2, 3])
  })

  it('reports engine errors with ClickHouse codes', async () => {
    await expect(store.query('SELECT * FROM no_such_table')).rejects.toThrow(/UNKNOWN_TABLE|60/)
    expect(await store.ping()).toBe(true)
  })
})
