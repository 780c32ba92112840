import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { chdbCappedReads, unsetPlaceholders } from '../../pipelines/connectors/store/capped-reads.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { tempDir } from '../helpers/temp.ts'

const CAPS = { maxExecutionSeconds: 1, maxMemoryBytes: 64 * 1024 * 1024, maxThreads: 1 }
/** A read that runs past a 1 s cap on any machine. */
const LONG = 'SELECT count() AS n FROM numbers({n:UInt64}) WHERE cityHash64(number) % 7 = 3'

describe('capped reads in embedded mode (the Query API’s connections to chdb)', () => {
  let store: ChdbStore
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const dir = await tempDir('capped-reads')
    cleanup = dir.cleanup
    store = await ChdbStore.open(dir.path, 'capped_db')
    await store.command('CREATE TABLE t (app_id String, n UInt64) ENGINE = MergeTree ORDER BY app_id')
    await store.command("INSERT INTO t VALUES ('a', 1), ('a', 2), ('b', 40)")
  })
  afterAll(async () => {
    vi.restoreAllMocks()
    await store.close()
    await cleanup()
  })

  /** Reads whose connections are counted as the store opens them. */
  const counted = (idle: number) => {
    const connect = vi.spyOn(store, 'connect')
    connect.mockClear()
    return { reads: chdbCappedReads(store, CAPS, idle), opened: () => connect.mock.calls.length }
  }

  it('keeps a connection between reads, and each read gets its own parameters’ answer', async () => {
    const { reads, opened } = counted(1)
    const sum = 'SELECT sum(n) AS s, currentDatabase() AS db FROM t WHERE app_id = {app:String}'
    const answers = []
    for (const app of ['a', 'b', 'a', 'c']) answers.push(await reads.query(sum, { app }))
    expect(answers).toEqual([
      [{ s: 3, db: 'capped_db' }],
      [{ s: 40, db: 'capped_db' }],
      [{ s: 3, db: 'capped_db' }],
      [{ s: 0, db: 'capped_db' }],
    ])
    expect(opened()).toBe(1)
    await reads.close()
  })

  it('opens a connection per read running at once and keeps at most `idle` of them', async () => {
    const { reads, opened } = counted(2)
    const three = await Promise.all([1, 2, 3].map((x) => reads.query('SELECT {x:UInt8} * 2 AS y', { x })))
    expect(three).toEqual([[{ y: 2 }], [{ y: 4 }], [{ y: 6 }]])
    expect(opened()).toBe(3)
    // Two were kept: two more reads at once open none.
    const two = await Promise.all([4, 5].map((x) => reads.query('SELECT {x:UInt8} * 2 AS y', { x })))
    expect(two).toEqual([[{ y: 8 }], [{ y: 10 }]])
    expect(opened()).toBe(3)
    await reads.close()
  })

  it('keeps the caps on a reused connection: no SETTINGS clause lifts them', async () => {
    const { reads } = counted(1)
    const settings = `SELECT getSetting('readonly') AS readonly, getSetting('max_threads') AS threads,
      getSetting('max_execution_time') AS seconds, getSetting('max_memory_usage') AS memory,
      getSetting('optimize_use_implicit_projections') AS implicit_projections`
    const caps = {
      readonly: 1,
      threads: 1,
      seconds: 1,
      memory: 64 * 1024 * 1024,
      implicit_projections: false,
    }
    expect(await reads.query(settings, {})).toEqual([caps])
    await expect(reads.query('SELECT 1 AS x SETTINGS max_threads = 8', {})).rejects.toThrow(/readonly/i)
    await expect(reads.query('SELECT 1 AS x SETTINGS max_execution_time = 100', {})).rejects.toThrow(
      /readonly/i,
    )
    expect(await reads.query(settings, {})).toEqual([caps])
    await reads.close()
  })

  it('stops a read at the time cap and answers the next one on a fresh connection', async () => {
    const { reads, opened } = counted(1)
    await expect(reads.query(LONG, { n: 100_000_000_000 })).rejects.toThrow(
      /TIMEOUT_EXCEEDED|time limit|Timeout/i,
    )
    expect(opened()).toBe(1)
    expect(await reads.query('SELECT sum(n) AS s FROM t WHERE app_id = {app:String}', { app: 'b' })).toEqual([
      { s: 40 },
    ])
    // The failed read's connection was closed, not kept.
    expect(opened()).toBe(2)
    await reads.close()
  })

  it('refuses a read naming a parameter it does not set: a kept connection still holds the last read’s', async () => {
    const { reads } = counted(1)
    expect(await reads.query('SELECT sum(n) AS s FROM t WHERE app_id = {app:String}', { app: 'b' })).toEqual([
      { s: 40 },
    ])
    await expect(reads.query('SELECT sum(n) AS s FROM t WHERE app_id = {app:String}', {})).rejects.toThrow(
      'query parameters not set: app',
    )
    await reads.close()
  })

  it('close waits for the reads under way, then refuses new ones', async () => {
    const { reads } = counted(1)
    const running = reads.query('SELECT count() AS n FROM numbers({n:UInt64})', { n: 50_000_000 })
    await reads.close()
    await expect(running).resolves.toEqual([{ n: 50_000_000 }])
    await expect(reads.query('SELECT 1 AS x', {})).rejects.toThrow('capped reads are closed')
  })

  it('names the placeholders a query does not set', () => {
    const params = { p0: 'x', app: 'a' }
    expect(
      unsetPlaceholders('SELECT {p0:String}, {app: String}, { p1 :UInt8}, {p2:Array(String)}', params),
    ).toEqual(['p1', 'p2'])
    expect(unsetPlaceholders("SELECT map('a', 1), arrayMap(x -> x.2, [(1, 2)]) WHERE 1", {})).toEqual([])
  })
})
