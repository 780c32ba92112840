import { copyFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { RecordBatch } from '../../pipelines/connectors/bus/bus.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { MIGRATIONS_DIR, migrate } from '../../pipelines/connectors/store/migrations.ts'
import type { QueryParams, Store } from '../../pipelines/connectors/store/store.ts'
import { encodeBlock } from '../../pipelines/events/event-block.ts'
import { EVENT_COLUMNS, EVENT_ROW_BINARY, rowBinaryEventRow } from '../../pipelines/events/event-row.ts'
import { eventsWriter } from '../../pipelines/events/events-writer.ts'
import { eventStore } from '../../pipelines/events/store-events.ts'
import { StoredKeys } from '../../pipelines/events/stored-keys.ts'
import { eventRow } from '../helpers/event-rows.ts'
import { tempDir } from '../helpers/temp.ts'
import type { UploadRef } from '../../pipelines/events/writer-item.ts'

const upload = (tx: string, recv: number): UploadRef => ({ tx, recv, org: 1, source: 'server' })
const row = (uuid: string, up: UploadRef) => rowBinaryEventRow(eventRow(uuid, up))
let offset = 0
const batch = (events: [string, UploadRef, number][]): RecordBatch => ({
  topic: 'events',
  partition: 0,
  records: [
    {
      topic: 'events',
      partition: 0,
      offset: String(offset++),
      key: null,
      headers: {},
      timestamp: 0,
      value: encodeBlock(
        events.map(([uuid, up, line]) => ({ app: 'app', uuid, line, upload: up, row: row(uuid, up) })),
      ),
    },
  ],
})

describe('events writer against the embedded engine', () => {
  let store: ChdbStore
  let dataDir: string
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const dir = await tempDir('writer')
    cleanup = dir.cleanup
    dataDir = dir.path
    store = await ChdbStore.open(dir.path)
    await migrate(store)
  })
  afterAll(async () => {
    await store.close()
    await cleanup()
  })

  const counts = async () =>
    Object.fromEntries(
      (
        await store.query<{ uuid: string; n: number }>('SELECT uuid, count() AS n FROM events GROUP BY uuid')
      ).map((r) => [r.uuid, Number(r.n)]),
    )
  const rejects = () =>
    store.query<{ transaction_id: string; line: number; reason: string }>(
      'SELECT transaction_id, line, reason FROM rejected_lines FINAL ORDER BY transaction_id, line',
    )

  /** The engine's store with some of its calls replaced (the rest pass through; close is a no-op). */
  const over = (overrides: Partial<Store>): Store => ({
    kind: store.kind,
    command: (sql, params) => store.command(sql, params),
    query: (sql, params) => store.query(sql, params),
    queryStream: (sql, params, format) => store.queryStream(sql, params, format),
    insert: (table, rows, options) => store.insert(table, rows, options),
    ping: () => store.ping(),
    close: async () => {},
    ...overrides,
  })

  it('stores once, reports later copies from other uploads as duplicates, skips replays', async () => {
    const up1 = upload('tx-1', 1_795_300_000_000)
    const up2 = upload('tx-2', 1_795_300_001_000)
    const writer = eventsWriter({ store })
    await writer(
      batch([
        ['u1', up1, 1],
        ['u2', up1, 2],
      ]),
    )
    await writer(
      batch([
        ['u2', up2, 1],
        ['u3', up2, 2],
      ]),
    )
    // The same upload's line again (a replay of the splitter): silently skipped.
    await writer(batch([['u1', up1, 1]]))
    expect(await counts()).toEqual({ u1: 1, u2: 1, u3: 1 })
    expect(await rejects()).toEqual([{ transaction_id: 'tx-2', line: 1, reason: 'duplicate' }])
  })

  it('stores every column of a RowBinary row, and of rows in blocks written before RowBinary', async () => {
    const up10 = upload('tx-10', 1_795_300_008_000)
    const writer = eventsWriter({ store })
    // Awkward values: a newline and a zero byte are data in RowBinary; non-ASCII; a negative Int64.
    const awkward = {
      ...eventRow('u10', up10),
      event_name: 'line\nbreak\u0000zero é 🎉',
      attributes: { 'k"ey': 'v\\al', empty: '' },
      ltv_change: -1_234_567_890_123,
    }
    const first = batch([['u10', up10, 1]])
    first.records[0]!.value = encodeBlock([
      { app: 'app', uuid: 'u10', line: 1, upload: up10, row: rowBinaryEventRow(awkward) },
    ])
    await writer(first)
    // Blocks as the splitter wrote them before RowBinary: no format mark (JSONEachRow objects), and
    // format 1 (JSONCompactEachRow arrays of EVENT_COLUMNS).
    const older = (uuid: string, line: number, f: 1 | undefined, text: string) => {
      const header = {
        ...(f ? { f } : {}),
        u: [[up10.tx, up10.recv, up10.org, up10.source]],
        k: [['app', uuid, line, 0]],
      }
      const b = batch([])
      b.records[0]!.value = Buffer.from(`${JSON.stringify(header)}\n${text}\n`)
      return b
    }
    await writer(older('u11', 2, undefined, JSON.stringify(eventRow('u11', up10))))
    const compact = eventRow('u12c', up10)
    await writer(older('u12c', 3, 1, JSON.stringify(EVENT_COLUMNS.map((c) => compact[c]))))
    const stored = await store.query<Record<string, unknown>>(
      `SELECT * EXCEPT (event_time, received_at), toUnixTimestamp64Milli(event_time) AS event_time,
              toUnixTimestamp64Milli(received_at) AS received_at
       FROM events WHERE uuid IN ('u10', 'u11', 'u12c') ORDER BY uuid`,
    )
    // 64-bit integers come back as strings or numbers depending on the column: compare as numbers.
    const numeric = (row: Record<string, unknown>) => ({
      ...row,
      event_time: Number(row.event_time),
      received_at: Number(row.received_at),
      ltv_change: Number(row.ltv_change),
    })
    expect(stored.map(numeric)).toEqual([awkward, eventRow('u11', up10), compact])
  })

  it("fills the Query API rollup through the writer's insert (views planned by the older analyzer) as an aggregation of the stored events does", async () => {
    const up = upload('tx-rollup', 1_795_300_009_000)
    const writer = eventsWriter({ store })
    const rows = Array.from({ length: 24 }, (_, i) => {
      const uuid = `rollup-${i}`
      const base = eventRow(uuid, up, { app: 'rollup-app', eventName: `e${i % 3}` })
      return {
        app: 'rollup-app',
        uuid,
        line: i + 1,
        upload: up,
        row: rowBinaryEventRow({
          ...base,
          // An hour apart in pairs; some without an install (users by customer), some sessionless.
          event_time: up.recv - (i % 2) * 3_600_000,
          install_uuid: i % 4 === 0 ? '' : `i${i % 5}`,
          customer_id: `c${i % 7}`,
          session_uuid: i % 6 === 0 ? '' : `s${i % 4}`,
          ltv_change: i * 10 - 50,
        }),
      }
    })
    const b = batch([])
    b.records[0]!.value = encodeBlock(rows)
    await writer(b)
    const rolled = await store.query<Record<string, unknown>>(
      `SELECT event_name, hour, sum(occurrences) AS n, sum(ltv) AS ltv, uniqMerge(users) AS users,
              uniqMerge(sessions) AS sessions
       FROM query_rollup WHERE app_id = 'rollup-app' AND kind = 'e' GROUP BY event_name, hour
       ORDER BY event_name, hour`,
    )
    const raw = await store.query<Record<string, unknown>>(
      `SELECT event_name, toStartOfHour(event_time) AS hour, count() AS n, sum(ltv_change) AS ltv,
              uniqIf(if(install_uuid != '', install_uuid, concat('customer:', customer_id)),
                     install_uuid != '' OR customer_id != '') AS users,
              uniqIf(session_uuid, session_uuid != '') AS sessions
       FROM events WHERE app_id = 'rollup-app' GROUP BY event_name, hour ORDER BY event_name, hour`,
    )
    expect(rolled).toHaveLength(6)
    expect(rolled.reduce((n, r) => n + Number(r.n), 0)).toBe(24)
    expect(rolled).toEqual(raw)
  })

  it('indexes every stored event in event_uuid_index, and the old event_uuids is gone', async () => {
    const up14 = upload('tx-14', 1_795_300_010_000)
    await eventsWriter({ store })(batch([['u14', up14, 1]]))
    expect(
      await store.query("SELECT app_id, uuid, transaction_id FROM event_uuid_index WHERE uuid = 'u14'"),
    ).toEqual([{ app_id: 'app', uuid: 'u14', transaction_id: 'tx-14' }])
    const granularity = await store.query<{ engine_full: string }>(
      "SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'event_uuid_index'",
    )
    expect(granularity[0]?.engine_full).toMatch(/index_granularity = 256/)
    expect(
      await store.query(
        "SELECT name FROM system.tables WHERE database = currentDatabase() AND name IN ('event_uuids', 'event_uuids_mv')",
      ),
    ).toEqual([])
  })

  it('an upgrade past migration 006 copies the old index into event_uuid_index', async () => {
    // A database migrated up to 005, with events indexed the old way, then upgraded.
    const upgraded = await ChdbStore.open(dataDir, 'sluice_upgrade')
    const old = await tempDir('migrations-before-006')
    try {
      for (const file of await readdir(MIGRATIONS_DIR)) {
        if (/^00[1-5]_.*\.sql$/.test(file)) await copyFile(join(MIGRATIONS_DIR, file), join(old.path, file))
      }
      await migrate(upgraded, old.path)
      const up15 = upload('tx-15', 1_795_300_011_000)
      await upgraded.insert('events', [eventRow('u15', up15), eventRow('u16', up15)])
      // Later migrations (008 on) apply too; the ones this upgrade is about are 006 and 007.
      expect((await migrate(upgraded)).applied.filter((v) => v <= 7)).toEqual([6, 7])
      expect(
        await upgraded.query('SELECT uuid, transaction_id FROM event_uuid_index FINAL ORDER BY uuid'),
      ).toEqual([
        { uuid: 'u15', transaction_id: 'tx-15' },
        { uuid: 'u16', transaction_id: 'tx-15' },
      ])
    } finally {
      await upgraded.close()
      await old.cleanup()
    }
  })

  it('events_ingest has the writer columns, in order, with the types of events (LowCardinality as String)', async () => {
    const columns = (table: string) =>
      store.query<{ name: string; type: string }>(
        'SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = {t:String} ORDER BY position',
        { t: table },
      )
    const ingest = await columns('events_ingest')
    expect(ingest.map((c) => c.name)).toEqual([...EVENT_COLUMNS])
    const eventTypes = new Map((await columns('events')).map((c) => [c.name, c.type]))
    for (const column of ingest) {
      expect(column.type).toBe(eventTypes.get(column.name)!.replace(/^LowCardinality\((.*)\)$/, '$1'))
    }
  })

  it('drops a block inserted again with the same deduplication token, through events_ingest', async () => {
    const up12 = upload('tx-12', 1_795_300_009_000)
    const rows = Buffer.concat([row('u12', up12), row('u13', up12)])
    const options = { dedupToken: 'events:0:900-901', rowBinary: EVENT_ROW_BINARY }
    await store.insert('events_ingest', rows, options)
    await store.insert('events_ingest', rows, options)
    const stored = await counts()
    expect([stored.u12, stored.u13]).toEqual([1, 1])
  })

  it('after a restart, finds events the index missed (a crash between the two writes of an insert)', async () => {
    const up3 = upload('tx-3', 1_795_300_002_000)
    await eventsWriter({ store })(batch([['u4', up3, 1]]))
    // Simulate the crash window: the events row is there, its index row is not.
    await store.command("ALTER TABLE event_uuid_index DELETE WHERE uuid = 'u4' SETTINGS mutations_sync = 1")
    expect(await store.query("SELECT uuid FROM event_uuid_index WHERE uuid = 'u4'")).toEqual([])
    // A new writer (a restarted process) gets the uncommitted batch again.
    await eventsWriter({ store })(batch([['u4', up3, 1]]))
    expect((await counts()).u4).toBe(1)
  })

  it('after a restart, indexes what an interrupted insert left unindexed, so a later copy is a duplicate', async () => {
    const up7 = upload('tx-7', 1_795_300_005_000)
    const up8 = upload('tx-8', 1_795_300_006_000)
    const up9 = upload('tx-9', 1_795_300_007_000)
    await eventsWriter({ store })(batch([['u7', up7, 1]]))
    // The crash window: u7 is in events, not in the index.
    await store.command("ALTER TABLE event_uuid_index DELETE WHERE uuid = 'u7' SETTINGS mutations_sync = 1")
    // The restarted writer's first batch does not hold u7 (it was committed before the crash)...
    const restarted = eventsWriter({ store })
    await restarted(batch([['u8', up8, 1]]))
    // ...and a copy from another upload comes right after, when only the index is consulted.
    await restarted(batch([['u7', up9, 3]]))
    expect((await counts()).u7).toBe(1)
    expect(await store.query("SELECT transaction_id FROM event_uuid_index FINAL WHERE uuid = 'u7'")).toEqual([
      { transaction_id: 'tx-7' },
    ])
    expect((await rejects()).filter((r) => r.transaction_id === 'tx-9')).toEqual([
      { transaction_id: 'tx-9', line: 3, reason: 'duplicate' },
    ])
  })

  describe('with the filter of stored keys (embedded mode)', () => {
    /** The store, counting the uuids the writer asks the dedupe index about. */
    const counting = () => {
      const asked: string[] = []
      const spy = over({
        query: (sql, params) => {
          const uuids = params?.uuids
          // One newline-joined string, or an array when a uuid holds a newline (string-set.ts).
          if (sql.includes('argMin(transaction_id, received_at)'))
            asked.push(...(typeof uuids === 'string' ? uuids.split('\n') : (uuids as string[])))
          return store.query(sql, params)
        },
      })
      return { spy, asked }
    }

    it('asks the index only about keys the filter may hold, and still finds every copy', async () => {
      const up20 = upload('tx-20', 1_795_300_020_000)
      const up21 = upload('tx-21', 1_795_300_021_000)
      // Stored before this process's filter is filled (by an earlier process).
      await eventsWriter({ store })(batch([['f1', up20, 1]]))
      const { spy, asked } = counting()
      const writer = eventsWriter({ store: spy, storedKeys: new StoredKeys(spy) })
      await writer(
        batch([
          ['f1', up21, 1], // a copy of a key the filter was filled with
          ['f2', up21, 2], // new
          ['f3', up21, 3], // new
        ]),
      )
      // A copy, in a later batch, of a key this writer stored itself.
      await writer(batch([['f2', upload('tx-22', 1_795_300_022_000), 1]]))
      const stored = await counts()
      expect([stored.f1, stored.f2, stored.f3]).toEqual([1, 1, 1])
      expect((await rejects()).filter((r) => ['tx-21', 'tx-22'].includes(r.transaction_id))).toEqual([
        { transaction_id: 'tx-21', line: 1, reason: 'duplicate' },
        { transaction_id: 'tx-22', line: 1, reason: 'duplicate' },
      ])
      // The new keys were never looked up (a false positive, ~1 %, would add one: none with 3 keys).
      expect(asked).not.toContain('f3')
      expect(asked).toEqual(expect.arrayContaining(['f1', 'f2']))
    })

    it('the sole writer answers copies of keys it stored recently itself, without the index', async () => {
      const recv = 1_795_300_030_000
      const { spy, asked } = counting()
      // Room for two keys: the oldest of three is forgotten.
      const events = eventStore({
        store: spy,
        soleWriter: true,
        storedKeys: new StoredKeys(spy),
        recentKeys: 2,
      })
      const item = (uuid: string, tx: string, line: number) => ({
        app: 'app',
        uuid,
        upload: { tx, recv, org: 1, source: 'server' as const },
        line,
        value: row(uuid, upload(tx, recv)),
      })
      const source = (n: number) => ({ topic: 'uploads', partition: 0, first: String(n), last: String(n) })
      expect(
        await events.write(
          [item('r1', 'tx-30', 1), item('r2', 'tx-30', 2), item('r3', 'tx-30', 3)],
          source(30),
        ),
      ).toEqual([])
      const copies = await events.write(
        [item('r3', 'tx-31', 1), item('r4', 'tx-31', 2), item('r2', 'tx-31', 3), item('r1', 'tx-31', 4)],
        source(31),
      )
      expect(copies.map((d) => [d.uuid, d.line, d.detail])).toEqual([
        ['r3', 1, 'an event with this uuid was already stored (transaction tx-30)'],
        ['r2', 3, 'an event with this uuid was already stored (transaction tx-30)'],
        ['r1', 4, 'an event with this uuid was already stored (transaction tx-30)'],
      ])
      // r2 and r3 were remembered; r1, forgotten, was asked of the index, which found it.
      expect(asked).toEqual(['r1'])
      const stored = await counts()
      expect([stored.r1, stored.r2, stored.r3, stored.r4]).toEqual([1, 1, 1, 1])
    })

    it('the sole writer repairs what its last insert left unindexed, whatever partition brings a copy', async () => {
      const up26 = upload('tx-26', 1_795_300_026_000)
      const up27 = upload('tx-27', 1_795_300_099_000)
      await eventsWriter({ store })(batch([['f6', up26, 1]]))
      // The crash window of the previous process's last insert: f6 is in events, not in the index.
      await store.command("ALTER TABLE event_uuid_index DELETE WHERE uuid = 'f6' SETTINGS mutations_sync = 1")
      const events = eventStore({ store, soleWriter: true, storedKeys: new StoredKeys(store) })
      // A copy from an upload received much later, on another partition (the crashed batch has not
      // come back yet): its own receipt time says nothing about f6's.
      const duplicates = await events.write(
        [
          {
            app: 'app',
            uuid: 'f6',
            upload: { tx: 'tx-27', recv: up27.recv, org: 1, source: 'server' },
            line: 4,
            value: row('f6', up27),
          },
        ],
        { topic: 'uploads', partition: 1, first: '0', last: '0' },
      )
      expect(duplicates).toMatchObject([
        { transaction_id: 'tx-27', line: 4, uuid: 'f6', reason: 'duplicate' },
      ])
      expect((await counts()).f6).toBe(1)
    })

    it('the sole writer repairs again after a write whose insert failed half-way', async () => {
      const up28 = upload('tx-28', 1_795_300_028_000)
      const item = (uuid: string, tx: string, line: number) => ({
        app: 'app',
        uuid,
        upload: { tx, recv: up28.recv, org: 1, source: 'server' as const },
        line,
        value: row(uuid, upload(tx, up28.recv)),
      })
      // An insert that writes the events and then fails before the index has them (the view's
      // write failing, say).
      let halfFail: string | undefined
      const flaky = over({
        insert: async (table, rows, options) => {
          await store.insert(table, rows, options)
          if (halfFail && table === 'events_ingest') {
            const uuid = halfFail
            halfFail = undefined
            await store.command(
              'ALTER TABLE event_uuid_index DELETE WHERE uuid = {uuid:String} SETTINGS mutations_sync = 1',
              { uuid },
            )
            throw new Error('view write failed')
          }
        },
      })
      const events = eventStore({ store: flaky, soleWriter: true, storedKeys: new StoredKeys(flaky) })
      const source = { topic: 'uploads', partition: 0, first: '7', last: '7' }
      await events.write([item('f8', 'tx-28', 1)], source)
      halfFail = 'f9'
      await expect(
        events.write([item('f9', 'tx-28', 2)], { ...source, first: '8', last: '8' }),
      ).rejects.toThrow('view write failed')
      // The next write, from another upload, holds a copy of f9: found, not stored again.
      const duplicates = await events.write([item('f9', 'tx-29', 1)], { ...source, first: '9', last: '9' })
      expect(duplicates).toMatchObject([{ transaction_id: 'tx-29', uuid: 'f9', reason: 'duplicate' }])
      expect((await counts()).f9).toBe(1)
      // The batch's retry sends the very same block (same source offsets) after a half-failed
      // insert: the repair and look-up find its rows, a replay, skipped, stored and indexed once.
      halfFail = 'f10'
      const retried = { ...source, first: '10', last: '10' }
      await expect(events.write([item('f10', 'tx-30', 1)], retried)).rejects.toThrow('view write failed')
      expect(await events.write([item('f10', 'tx-30', 1)], retried)).toEqual([])
      expect((await counts()).f10).toBe(1)
      const indexed = await store.query<{ n: string }>(
        "SELECT count() AS n FROM event_uuid_index WHERE uuid = 'f10'",
      )
      expect(Number(indexed[0]!.n)).toBe(1)
    })

    describe('a write looked up while the one before it is inserted', () => {
      const item = (uuid: string, tx: string, line: number, recv: number) => ({
        app: 'app',
        uuid,
        upload: { tx, recv, org: 1, source: 'server' as const },
        line,
        value: row(uuid, upload(tx, recv)),
      })
      /** The store, holding the insert into events_ingest until released, logging what happens. */
      const gated = (onInsert?: () => Promise<void>) => {
        const log: string[] = []
        let release!: () => void
        const released = new Promise<void>((r) => (release = r))
        let held = true
        const spy = over({
          query: async <T>(sql: string, params?: QueryParams) => {
            const rows = await store.query<T>(sql, params)
            if (sql.includes('argMin(transaction_id, received_at)'))
              log.push(`look-up ${String(params?.uuids)}`)
            return rows
          },
          insert: async (table, rows, options) => {
            if (table !== 'events_ingest') return store.insert(table, rows, options)
            if (held) {
              held = false
              log.push('insert held')
              await released
            }
            await store.insert(table, rows, options)
            await onInsert?.()
            log.push('insert done')
          },
        })
        return { spy, log, release }
      }

      it('finds the keys that insert is storing among those it remembers: a copy is a duplicate, stored once, and the index is not asked', async () => {
        const recv = 1_795_300_040_000
        const { spy, log, release } = gated()
        const events = eventStore({ store: spy, soleWriter: true, storedKeys: new StoredKeys(spy) })
        const source = (n: number) => ({ topic: 'uploads', partition: 0, first: String(n), last: String(n) })
        const first = events.write([item('p1', 'tx-40', 1, recv), item('p2', 'tx-40', 2, recv)], source(40))
        // The first write is decided and its insert under way when the second is asked for.
        await vi.waitFor(() => expect(log).toEqual(['insert held']))
        // Copies of p1 and p2 from another upload, and a new key.
        const second = events.write(
          [
            item('p1', 'tx-41', 1, recv + 1),
            item('p3', 'tx-41', 2, recv + 1),
            item('p2', 'tx-41', 3, recv + 1),
          ],
          source(41),
        )
        release()
        expect(await first).toEqual([])
        expect((await second).map((d) => [d.transaction_id, d.uuid, d.line, d.detail])).toEqual([
          ['tx-41', 'p1', 1, 'an event with this uuid was already stored (transaction tx-40)'],
          ['tx-41', 'p2', 3, 'an event with this uuid was already stored (transaction tx-40)'],
        ])
        // The copies were answered by the keys the first write was storing: no look-up at all.
        expect(log).toEqual(['insert held', 'insert done', 'insert done'])
        const stored = await counts()
        expect([stored.p1, stored.p2, stored.p3]).toEqual([1, 1, 1])
      })

      it('learns the keys an insert stored when it ends, for a write looked up before it was decided', async () => {
        const recv = 1_795_300_045_000
        const { spy, log, release } = gated()
        const events = eventStore({ store: spy, soleWriter: true, storedKeys: new StoredKeys(spy) })
        const source = (n: number) => ({ topic: 'uploads', partition: 0, first: String(n), last: String(n) })
        // The first write's insert is held; the second waits for its turn, undecided, while the
        // third, holding copies of the second's keys, is looked up.
        const first = events.write([item('q0', 'tx-45', 1, recv)], source(45))
        const second = events.write([item('q1', 'tx-46', 1, recv), item('q2', 'tx-46', 2, recv)], source(46))
        const third = events.write(
          [
            item('q1', 'tx-47', 1, recv + 1),
            item('q3', 'tx-47', 2, recv + 1),
            item('q2', 'tx-47', 3, recv + 1),
          ],
          source(47),
        )
        await vi.waitFor(() => expect(log).toEqual(['insert held', 'look-up q1\nq2']))
        release()
        expect(await first).toEqual([])
        expect(await second).toEqual([])
        expect((await third).map((d) => [d.transaction_id, d.uuid, d.line, d.detail])).toEqual([
          ['tx-47', 'q1', 1, 'an event with this uuid was already stored (transaction tx-46)'],
          ['tx-47', 'q2', 3, 'an event with this uuid was already stored (transaction tx-46)'],
        ])
        // Its look-up ran before the second insert, and nothing else was asked later.
        expect(log).toEqual(['insert held', 'look-up q1\nq2', 'insert done', 'insert done', 'insert done'])
        const stored = await counts()
        expect([stored.q1, stored.q2, stored.q3]).toEqual([1, 1, 1])
      })

      it('asks the index again when that insert fails half-way, after repairing it, about what it remembered too', async () => {
        const recv = 1_795_300_042_000
        let failed = false
        const { spy, log, release } = gated(async () => {
          if (failed) return
          failed = true
          // The events are written, the index misses one of them, and the insert fails.
          await store.command(
            "ALTER TABLE event_uuid_index DELETE WHERE uuid = 'p4' SETTINGS mutations_sync = 1",
          )
          throw new Error('view write failed')
        })
        const events = eventStore({ store: spy, soleWriter: true, storedKeys: new StoredKeys(spy) })
        const source = (n: number) => ({ topic: 'uploads', partition: 0, first: String(n), last: String(n) })
        const first = events.write([item('p4', 'tx-42', 1, recv)], source(42))
        const firstFailed = expect(first).rejects.toThrow('view write failed')
        await vi.waitFor(() => expect(log).toEqual(['insert held']))
        // A copy of p4, answered by the keys the first write is storing.
        const second = events.write(
          [item('p4', 'tx-43', 1, recv + 1), item('p5', 'tx-43', 2, recv + 1)],
          source(43),
        )
        // A third write, asked for before the first fails: copies of what the first and second store.
        const third = events.write(
          [item('p5', 'tx-44', 1, recv + 2), item('p4', 'tx-44', 2, recv + 2)],
          source(44),
        )
        await vi.waitFor(() => expect(log).toEqual(['insert held', 'look-up p5']))
        release()
        await firstFailed
        expect((await second).map((d) => [d.transaction_id, d.uuid, d.detail])).toEqual([
          ['tx-43', 'p4', 'an event with this uuid was already stored (transaction tx-42)'],
        ])
        expect((await third).map((d) => [d.transaction_id, d.uuid, d.detail])).toEqual([
          ['tx-44', 'p5', 'an event with this uuid was already stored (transaction tx-43)'],
          ['tx-44', 'p4', 'an event with this uuid was already stored (transaction tx-42)'],
        ])
        // p4 was answered from memory and p5 looked up during the first insert; once it had failed
        // and was repaired, both writes asked the index about all of their suspects (the third
        // stores nothing: no insert).
        expect(log).toEqual(['insert held', 'look-up p5', 'look-up p4', 'insert done', 'look-up p5\np4'])
        const stored = await counts()
        expect([stored.p4, stored.p5]).toEqual([1, 1])
      })
    })

    it('after a restart, a key an interrupted insert left unindexed is repaired into the filter too', async () => {
      const up23 = upload('tx-23', 1_795_300_023_000)
      const up24 = upload('tx-24', 1_795_300_024_000)
      const up25 = upload('tx-25', 1_795_300_025_000)
      await eventsWriter({ store })(batch([['f4', up23, 1]]))
      // The crash window: f4 is in events, not in the index, so the new process's filter lacks it.
      await store.command("ALTER TABLE event_uuid_index DELETE WHERE uuid = 'f4' SETTINGS mutations_sync = 1")
      const restarted = eventsWriter({ store, storedKeys: new StoredKeys(store) })
      // Its first batch repairs the index (and the filter) from the events received since.
      await restarted(batch([['f5', up24, 1]]))
      // A copy from another upload, when only the filter and the index are consulted.
      await restarted(batch([['f4', up25, 2]]))
      expect((await counts()).f4).toBe(1)
      expect((await rejects()).filter((r) => r.transaction_id === 'tx-25')).toEqual([
        { transaction_id: 'tx-25', line: 2, reason: 'duplicate' },
      ])
    })
  })

  it('checks for replays again when a partition comes back after a pause (another owner may have crashed mid-insert)', async () => {
    const up4 = upload('tx-4', 1_795_300_003_000)
    const up5 = upload('tx-5', 1_795_300_004_000)
    // The writer's clock, moved by hand: the settle time passes without sleeping.
    let now = 1_795_400_000_000
    const writer = eventsWriter({ store, now: () => now })
    await writer(batch([['u5', up4, 1]]))
    // Meanwhile another owner inserted tx-5's events and crashed before its index row and commit.
    await eventsWriter({ store })(batch([['u6', up5, 1]]))
    await store.command("ALTER TABLE event_uuid_index DELETE WHERE uuid = 'u6' SETTINGS mutations_sync = 1")
    now += 2100
    await writer(batch([['u6', up5, 1]]))
    expect((await counts()).u6).toBe(1)
  })
  it('within the settle time the index alone answers; past it, the index is repaired first', async () => {
    const up15 = upload('tx-15', 1_795_300_011_000)
    let now = 1_795_500_000_000
    const repairs: number[] = []
    const spy = over({
      query: (sql, params) => {
        if (/FROM events\s+WHERE received_at >=/.test(sql)) repairs.push(now)
        return store.query(sql, params)
      },
    })
    const writer = eventsWriter({ store: spy, now: () => now })
    const t0 = now
    await writer(batch([['u15', up15, 1]]))
    now += 1_000
    await writer(batch([['u16', up15, 2]]))
    now += 2_001
    await writer(batch([['u17', up15, 3]]))
    // The first batch (nothing written here yet) and the one after more than 2 s repair; the one 1 s after does not.
    expect(repairs).toEqual([t0, t0 + 3_001])
    const stored = await counts()
    expect([stored.u15, stored.u16, stored.u17]).toEqual([1, 1, 1])
  })

  it('a block that does not decode is reported as a dead letter; the other blocks of the batch are stored', async () => {
    const up17 = upload('tx-17', 1_795_300_013_000)
    const good = batch([['u18', up17, 1]])
    const poison = { ...good.records[0]!, offset: String(offset++), value: Buffer.from('no header line') }
    const after = batch([['u19', up17, 2]]).records[0]!
    const report = await eventsWriter({ store })({
      topic: 'events',
      partition: 0,
      records: [good.records[0]!, poison, after],
    })
    expect(report.outcomes).toHaveLength(1)
    expect(report.outcomes[0]!.record.offset).toBe(poison.offset)
    expect(report.outcomes[0]!.outcome).toMatchObject({ kind: 'dead-letter' })
    const error = (report.outcomes[0]!.outcome as { error: Error }).error
    expect(`${error.message}: ${(error.cause as Error).message}`).toBe(
      'undecodable event block: event block without a header line',
    )
    const stored = await counts()
    expect([stored.u18, stored.u19]).toEqual([1, 1])
  })
})
