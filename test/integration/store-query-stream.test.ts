import { randomUUID } from 'node:crypto'
import type { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { ClickHouseStore } from '../../pipelines/connectors/store/clickhouse-store.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { clickhouseForTests, type ClickHouseForTests } from '../helpers/clickhouse-standin.ts'
import { tempDir } from '../helpers/temp.ts'

async function collect(stream: Readable): Promise<{ bytes: Buffer; chunks: number }> {
  const parts: Buffer[] = []
  for await (const chunk of stream) parts.push(chunk as Buffer)
  return { bytes: Buffer.concat(parts), chunks: parts.length }
}

/** The streaming query of the Store port, the same checks on both adapters. */
function streamContract(open: () => Promise<{ store: Store; close(): Promise<void> }>): void {
  let store: Store
  let opened: { store: Store; close(): Promise<void> }
  beforeAll(async () => {
    opened = await open()
    store = opened.store
    await store.command(
      'CREATE TABLE qs (id UInt32, name String, tags Map(String, String)) ENGINE = MergeTree ORDER BY id',
    )
    const rows = Array.from({ length: 30_000 }, (_, i) => ({
      id: i,
      name: i % 7 === 0 ? `tab\there "${i}" ünï 🎉` : `n${i}`,
      tags: i % 2 === 0 ? { k: String(i) } : {},
    }))
    await store.insert('qs', rows)
  })
  afterAll(() => opened.close())

  it('streams the engine bytes of the format, with bound parameters, in several chunks', async () => {
    const sql = 'SELECT id, name, tags FROM qs WHERE id >= {from:UInt32} ORDER BY id'
    const { bytes, chunks } = await collect(store.queryStream(sql, { from: 10 }, 'JSONEachRow'))
    const lines = bytes.toString('utf8').split('\n')
    expect(lines.pop()).toBe('')
    expect(lines).toHaveLength(29_990)
    // The same rows the buffered query answers, byte for byte once serialised the engine's way.
    const expected = await store.query<{ id: number; name: string; tags: Record<string, string> }>(sql, {
      from: 10,
    })
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(expected)
    expect(JSON.parse(lines[0]!)).toEqual({ id: 10, name: 'n10', tags: { k: '10' } })
    expect(JSON.parse(lines[4]!)).toEqual({ id: 14, name: 'tab\there "14" ünï 🎉', tags: { k: '14' } })
    if (store.kind === 'chdb') expect(chunks).toBeGreaterThan(1)
  })

  it('streams a raw text format as is (TabSeparatedRaw of one JSON column is JSON lines)', async () => {
    const { bytes } = await collect(
      store.queryStream(
        "SELECT concat('{\"n\":', toJSONString(name), '}') FROM qs WHERE id < {n:UInt32} ORDER BY id",
        { n: 8 },
        'TabSeparatedRaw',
      ),
    )
    const lines = bytes.toString('utf8').trimEnd().split('\n')
    expect(lines.map((l) => (JSON.parse(l) as { n: string }).n)).toEqual([
      'tab\there "0" ünï 🎉',
      'n1',
      'n2',
      'n3',
      'n4',
      'n5',
      'n6',
      'tab\there "7" ünï 🎉',
    ])
  })

  it('ends the stream with the engine error of a bad query, and keeps serving', async () => {
    await expect(
      collect(store.queryStream('SELECT * FROM no_such_table', {}, 'JSONEachRow')),
    ).rejects.toThrow(/no_such_table|UNKNOWN_TABLE|doesn't exist|does not exist/i)
    expect(Number((await store.query<{ n: unknown }>('SELECT count() AS n FROM qs'))[0]?.n)).toBe(30_000)
  })

  it('stops the query when the reader goes away', async () => {
    const stream = store.queryStream('SELECT id, name FROM qs ORDER BY id', {}, 'JSONEachRow')
    for await (const chunk of stream) {
      expect((chunk as Buffer).length).toBeGreaterThan(0)
      break
    }
    expect(stream.destroyed).toBe(true)
    // The connection it used is released: the store answers, and streams again.
    expect(
      Number((await store.query<{ n: unknown }>('SELECT count() AS n FROM qs WHERE id < 5'))[0]?.n),
    ).toBe(5)
    const { bytes } = await collect(
      store.queryStream('SELECT id FROM qs WHERE id < 3 ORDER BY id', {}, 'TSV'),
    )
    expect(bytes.toString()).toBe('0\n1\n2\n')
  })
}

describe('Store.queryStream on chdb (embedded)', () => {
  streamContract(async () => {
    const dir = await tempDir('query-stream')
    const store = await ChdbStore.open(dir.path)
    return {
      store,
      async close() {
        await store.close()
        await dir.cleanup()
      },
    }
  })
})

describe('Store.queryStream on a ClickHouse server over HTTP', () => {
  let ch: ClickHouseForTests
  streamContract(async () => {
    ch = await clickhouseForTests()
    const database = `sluice_qs_${randomUUID().replace(/-/g, '').slice(0, 12)}`
    const store = await ClickHouseStore.open({
      url: ch.url,
      username: ch.username,
      password: ch.password,
      database,
    })
    return {
      store,
      async close() {
        await store.command(`DROP DATABASE IF EXISTS ${database}`).catch(() => undefined)
        await store.close()
        await ch.stop()
      },
    }
  })
})
