import { randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'
import { ClickHouseError, ClickHouseLogLevel, createClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ClickHouseStore } from '../../pipelines/connectors/store/clickhouse-store.ts'
import { RowBinaryWriter } from '../../pipelines/events/row-binary.ts'
import { clickhouseForTests, type ClickHouseForTests } from '../helpers/clickhouse-standin.ts'
import { insertsThroughASelect } from '../helpers/insert-select-case.ts'
import { piecesOf } from '../helpers/row-pieces.ts'

// Unless CLICKHOUSE_URL is set, this runs against the local stand-in for a ClickHouse server, backed
// by chdb (the writable SQL port in a child process); it is not a real ClickHouse server.
const target = process.env.CLICKHOUSE_URL ? 'CLICKHOUSE_URL' : 'chdb-backed stand-in, not a real server'

describe(`ClickHouseStore over HTTP (${target})`, () => {
  let ch: ClickHouseForTests
  let store: ClickHouseStore
  const database = `sluice_t_${randomUUID().replace(/-/g, '').slice(0, 12)}`

  beforeAll(async () => {
    ch = await clickhouseForTests()
    store = await ClickHouseStore.open({
      url: ch.url,
      username: ch.username,
      password: ch.password,
      database,
    })
  })

  afterAll(async () => {
    await store?.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined)
    await store?.close()
    await ch?.stop()
  })

  it('reports which ClickHouse it talks to', async () => {
    expect(ch.source).toBe(process.env.CLICKHOUSE_URL ? 'CLICKHOUSE_URL' : 'chdb-standin')
    expect(await store.ping()).toBe(true)
  })

  it('answers a short query while a long one runs, and keeps each request in its database', async () => {
    await store.command('CREATE TABLE t_where (n UInt8) ENGINE = MergeTree ORDER BY n')
    await store.insert('t_where', [{ n: 7 }])
    const finished: string[] = []
    // About 2 s in the engine (4 rows, 0.5 s each), on the store's database.
    const long = store
      .query<{ s: number }>('SELECT sum(sleepEachRow(0.5)) AS s FROM numbers(4)')
      .then(() => finished.push('long'))
    // The short one names its table without a database: it runs in the store's, not `default`.
    await new Promise((resolve) => setTimeout(resolve, 200))
    const short = await store.query<{ n: number }>('SELECT n FROM t_where')
    finished.push('short')
    await long
    expect(short).toEqual([{ n: 7 }])
    expect(finished).toEqual(['short', 'long'])
  })

  it('creates a table, inserts objects and queries them back with parameters', async () => {
    await store.command(
      'CREATE TABLE t_events (id UInt32, name String, tags Map(String, String)) ENGINE = MergeTree ORDER BY id',
    )
    await store.insert('t_events', [
      { id: 1, name: "o'brien", tags: { a: '1' } },
      { id: 2, name: 'b;c', tags: {} },
      { id: 3, name: 'tab\there', tags: { k: 'v' } },
    ])
    const rows = await store.query<{ id: number; name: string; tags: Record<string, string> }>(
      'SELECT id, name, tags FROM t_events WHERE id >= {min:UInt32} AND name != {skip:String} ORDER BY id',
      { min: 1, skip: 'b;c' },
    )
    expect(rows).toEqual([
      { id: 1, name: "o'brien", tags: { a: '1' } },
      { id: 3, name: 'tab\there', tags: { k: 'v' } },
    ])
    const quoted = await store.query<{ id: number }>('SELECT id FROM t_events WHERE name = {name:String}', {
      name: "o'brien",
    })
    expect(quoted).toEqual([{ id: 1 }])
  })

  it('inserts a ready JSONEachRow Buffer as the rows it holds', async () => {
    await store.command('CREATE TABLE t_buffer (id UInt32, name String) ENGINE = MergeTree ORDER BY id')
    await store.insert('t_buffer', Buffer.from('{"id":1,"name":"a;b"}\n{"id":2,"name":"o\'c"}\n'))
    // ClickHouseStore sends the Buffer as Readable.from([buffer]), an object-mode stream, which
    // @clickhouse/client JSON-encodes item by item ({"type":"Buffer","data":[…]}): a real server
    // stores default rows for that just as the stand-in does, until the stream carries bytes.
    expect(await store.query('SELECT id, name FROM t_buffer ORDER BY id')).toEqual([
      { id: 1, name: 'a;b' },
      { id: 2, name: "o'c" },
    ])
  })

  it('inserts RowBinary rows given in pieces, through one buffer reused between pieces', async () => {
    await store.command('CREATE TABLE t_pieces (id UInt32, name String) ENGINE = MergeTree ORDER BY id')
    const w = new RowBinaryWriter()
    for (let id = 1; id <= 50; id++) {
      w.uint(id, 4)
      w.string(`name-${id}`)
    }
    const given = piecesOf(Buffer.from(w.view()), 100)
    await store.insert('t_pieces', given, {
      rowBinary: [
        ['id', 'UInt32'],
        ['name', 'String'],
      ],
    })
    expect(given.handed).toBeGreaterThan(3)
    const rows = await store.query<{ id: number; name: string }>('SELECT id, name FROM t_pieces ORDER BY id')
    expect(rows).toEqual(Array.from({ length: 50 }, (_, i) => ({ id: i + 1, name: `name-${i + 1}` })))
    // Pieces are RowBinary only, as in the embedded engine's adapter.
    await expect(store.insert('t_pieces', piecesOf(Buffer.from(w.view()), 100))).rejects.toThrow(
      'RowBinary only',
    )
  })

  it('inserts RowBinary rows of the named columns, LowCardinality and Map included, once per dedupToken', async () => {
    await store.command(
      `CREATE TABLE t_binary (id UInt32 DEFAULT 7, name LowCardinality(String), at DateTime64(3, 'UTC'), tags Map(String, String))
       ENGINE = MergeTree ORDER BY name SETTINGS non_replicated_deduplication_window = 100`,
    )
    const w = new RowBinaryWriter()
    for (const [name, at, tags] of [
      ['new\nline\u0000zero é', 1_795_300_000_123, { a: '1' }],
      ["o'c", -1, {}],
    ] as const) {
      w.string(name)
      w.int64(at)
      w.stringMap(tags)
    }
    const columns = [
      ['name', 'String'],
      ['at', "DateTime64(3, 'UTC')"],
      ['tags', 'Map(String, String)'],
    ] as const
    for (let i = 0; i < 2; i++)
      await store.insert('t_binary', Buffer.from(w.view()), { rowBinary: columns, dedupToken: 'rb-0' })
    const rows = await store.query<{ id: number; name: string; ms: string | number; tags: object }>(
      'SELECT id, name, toUnixTimestamp64Milli(at) AS ms, tags FROM t_binary ORDER BY name',
    )
    // 64-bit integers come back quoted from a server, as numbers from the stand-in: compare as numbers.
    expect(rows.map((r) => ({ ...r, ms: Number(r.ms) }))).toEqual([
      { id: 7, name: 'new\nline\u0000zero é', ms: 1_795_300_000_123, tags: { a: '1' } },
      { id: 7, name: "o'c", ms: -1, tags: {} },
    ])
  })

  it('inserts what a SELECT makes of RowBinary rows, with query parameters, and no table in between', () =>
    insertsThroughASelect(store))

  it('stores an insert repeated with the same dedupToken once', async () => {
    await store.command(
      'CREATE TABLE t_dedup (id UInt32, v String) ENGINE = MergeTree ORDER BY id SETTINGS non_replicated_deduplication_window = 1000',
    )
    await store.insert('t_dedup', [{ id: 1, v: 'a' }], { dedupToken: 'offsets-0-0' })
    await store.insert('t_dedup', [{ id: 1, v: 'a' }], { dedupToken: 'offsets-0-0' })
    await store.insert('t_dedup', [{ id: 2, v: 'b' }], { dedupToken: 'offsets-1-1' })
    await store.insert('t_dedup', [{ id: 2, v: 'b' }], { dedupToken: 'offsets-1-1' })
    // Same rows, new token: a new insert, stored again.
    await store.insert('t_dedup', [{ id: 1, v: 'a' }], { dedupToken: 'offsets-2-2' })
    const rows = await store.query<{ id: number; v: string; c: number | string }>(
      'SELECT id, v, count() AS c FROM t_dedup GROUP BY id, v ORDER BY id',
    )
    expect(rows.map((r) => ({ ...r, c: Number(r.c) }))).toEqual([
      { id: 1, v: 'a', c: 2 },
      { id: 2, v: 'b', c: 1 },
    ])
  })

  it('speaks gzip both ways and reports server errors as ClickHouseError', async () => {
    const client = createClient({
      url: ch.url,
      username: ch.username,
      password: ch.password,
      database,
      compression: { request: true, response: true },
      log: { level: ClickHouseLogLevel.OFF },
    })
    try {
      await client.insert({
        table: 't_events',
        values: [{ id: 10, name: 'gz', tags: {} }],
        format: 'JSONEachRow',
      })
      // Bytes in the body, the statement in the URL (client.exec), gzipped: parsed by the engine itself.
      const bytes = Readable.from([Buffer.from('{"id":11,"name":"raw","tags":{}}\n')], { objectMode: false })
      const exec = await client.exec({ query: 'INSERT INTO t_events FORMAT JSONEachRow', values: bytes })
      exec.stream.resume()
      const rs = await client.query({
        query: 'SELECT id, name FROM t_events WHERE id >= {id:UInt32} ORDER BY id',
        format: 'JSONEachRow',
        query_params: { id: 10 },
      })
      expect(await rs.json()).toEqual([
        { id: 10, name: 'gz' },
        { id: 11, name: 'raw' },
      ])
      const err = await client.query({ query: 'SELECT * FROM no_such_table' }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ClickHouseError)
      expect(err).toMatchObject({ code: '60', type: 'UNKNOWN_TABLE' })
      // The failed query ran inside `database`; the next one still does.
      const after = await client.query({ query: 'SELECT currentDatabase() AS db', format: 'JSONEachRow' })
      expect(await after.json()).toEqual([{ db: database }])
    } finally {
      await client.close()
    }
  })
})
