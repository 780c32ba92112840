import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Bus, BusRecord } from '../../pipelines/connectors/bus/bus.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import runTask, { type CpuRunner } from '../../pipelines/cpu/tasks.ts'
import { eventStore } from '../../pipelines/events/store-events.ts'
import { StoredKeys } from '../../pipelines/events/stored-keys.ts'
import { serverUploadSplitter } from '../../pipelines/events/upload-splitter.ts'
import { readReceipt, type UploadReceipt } from '../../services/edge/uploads/receipts.ts'
import { SCHEMA_URL, lines, uuid } from '../helpers/ingestion-scenario.ts'
import { tempDir } from '../helpers/temp.ts'

// A batch's receipts are recorded group by group, each as soon as its events are inserted
// (docs/events.md, "Receipts"): the real splitter, event store and receipt reader over the
// embedded engine, with groups of one upload each.
const ORG = 1
const APP = 'per-group-app'
const PER_UPLOAD = 10

/** The CPU pool's task, run on this thread. */
const pool: CpuRunner = { run: (task) => Promise.resolve(runTask(task)) }

describe('receipts recorded per group (embedded engine)', () => {
  let engine: ChdbStore
  let cleanup: () => Promise<void>
  let offset = 0
  beforeAll(async () => {
    const dir = await tempDir('per-group')
    cleanup = dir.cleanup
    engine = await ChdbStore.open(dir.path)
    await migrate(engine)
    // carol's device in the app: every event is attributed.
    await engine.insert('customer_devices', [
      {
        app_id: APP,
        customer_id: 'carol',
        install_uuid: 'i-1',
        device_uuid: 'd-1',
        session_uuid: 's-1',
        last_active_at: Date.now(),
        app_version: '1.0',
        os_version: '17',
        platform: 'ios',
        model: 'm',
        country: 'nl',
        language: 'nl',
        device_timezone: 'Europe/Amsterdam',
        push_token: '',
        push_status: '',
        user_type: '',
        version: 1,
      },
    ])
  })
  afterAll(async () => {
    await engine.close()
    await cleanup()
  })

  /** An upload record of PER_UPLOAD events (the uuids given, then fresh ones). */
  const upload = (uuids: string[] = []): BusRecord => {
    const now = Date.now()
    const n = offset++
    const body = lines(
      Array.from({ length: PER_UPLOAD }, (_, i) => ({
        schema_url: SCHEMA_URL,
        app_uuid: APP,
        customer_id: 'carol',
        event_name: `e${i}`,
        event_time: now,
        uuid: uuids[i] ?? uuid(),
      })),
    )
    return {
      topic: 'uploads',
      partition: 0,
      offset: String(n),
      key: null,
      value: Buffer.from(body),
      headers: {
        tx: `pg-tx-${n}`,
        org: String(ORG),
        key: 'k',
        recv: String(now),
        enc: 'identity',
        src: 'server',
      },
      timestamp: now,
    }
  }
  const uuidsOf = (record: BusRecord) =>
    record.value
      .toString()
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { uuid: string }).uuid)

  /**
   * The engine's store, seen through: each receipts insert checked, just before it runs, against
   * what a reader finds then (events stored and rejected lines of each of its uploads), and the
   * uploads of each noted (`receiptInserts`); the `hold`-th insert into `events` (1-based) held
   * until `release`, or failed, once; the `holdReceipts`-th receipts insert held until
   * `releaseReceipts`.
   */
  const watched = (plan: { hold?: number; fail?: number; holdReceipts?: number } = {}) => {
    const atRecording: { tx: string; direct: number; rejected: number; stored: number; listed: number }[] = []
    const receiptInserts: string[][] = []
    let inserts = 0
    let release!: () => void
    const released = new Promise<void>((r) => (release = r))
    let held!: () => void
    const holding = new Promise<void>((r) => (held = r))
    let releaseReceipts!: () => void
    const receiptsReleased = new Promise<void>((r) => (releaseReceipts = r))
    let receiptsHeld!: () => void
    const holdingReceipts = new Promise<void>((r) => (receiptsHeld = r))
    const store: Store = {
      kind: engine.kind,
      command: (sql, params) => engine.command(sql, params),
      query: (sql, params) => engine.query(sql, params),
      queryStream: (sql, params, format) => engine.queryStream(sql, params, format),
      insert: async (table, rows, options) => {
        if (table === 'events_ingest') {
          inserts++
          if (inserts === plan.fail) throw new Error('engine refused the insert')
          if (inserts === plan.hold) {
            held()
            await released
          }
        }
        if (table === 'upload_receipts' && Array.isArray(rows)) {
          const receipts = rows as { transaction_id: string; direct: number; rejected: number }[]
          receiptInserts.push(receipts.map((r) => r.transaction_id))
          if (receiptInserts.length === plan.holdReceipts) {
            receiptsHeld()
            await receiptsReleased
          }
          for (const row of receipts)
            atRecording.push({
              tx: row.transaction_id,
              direct: row.direct,
              rejected: row.rejected,
              stored: await storedOf(row.transaction_id),
              listed: (await rejectedOf(row.transaction_id)).length,
            })
        }
        return engine.insert(table, rows, options)
      },
      ping: () => engine.ping(),
      close: async () => {},
    }
    return { store, atRecording, receiptInserts, release, holding, releaseReceipts, holdingReceipts }
  }
  const splitterOver = (store: Store) =>
    serverUploadSplitter({
      pool,
      store,
      bus: { lag: () => Promise.resolve(0) } as unknown as Bus,
      apps: { getApp: () => Promise.resolve({ org_id: ORG }) },
      forward: { events: eventStore({ store, soleWriter: true, storedKeys: new StoredKeys(store) }) },
      sdk: { group: 'g', topic: 't', waitMs: 0 },
      pastWindowMs: 3_600_000,
      futureWindowMs: 3_600_000,
      maxInflatedBytes: 64 * 1024 * 1024,
      eventsPerWrite: PER_UPLOAD,
    })
  const storedOf = async (tx: string) =>
    Number(
      (
        await engine.query<{ n: number }>(
          'SELECT count() AS n FROM events WHERE transaction_id = {tx:String}',
          {
            tx,
          },
        )
      )[0]!.n,
    )
  const rejectedOf = (tx: string) =>
    engine.query<{ line: number; reason: string }>(
      'SELECT line, reason FROM rejected_lines FINAL WHERE transaction_id = {tx:String} ORDER BY line',
      { tx },
    )
  const receipt = (record: BusRecord): Promise<UploadReceipt> =>
    readReceipt(
      engine,
      record.headers.tx!,
      { orgId: ORG, receivedAt: Number(record.headers.recv) },
      { orgId: ORG },
    )
  const summary = (r: UploadReceipt) => ({
    state: r.state,
    accepted: r.accepted,
    rejected: r.rejected,
    reasons: r.rejected_lines.map((l) => `${l.line}:${l.reason}`),
  })

  it("says done for a group's uploads once its events are queryable, while the batch's next group is still being inserted", async () => {
    const first = upload()
    // The second upload sends two of the first's events again: duplicates, found by the writer.
    const second = upload(uuidsOf(first).slice(0, 2))
    const third = upload()
    const { store, atRecording, release, holding } = watched({ hold: 2 })
    const splitter = splitterOver(store)
    let finished = false
    const run = splitter({ topic: 'uploads', partition: 0, records: [first, second, third] }).then(
      () => (finished = true),
    )
    await holding
    // The second group's insert is held: the first group's receipt is done already, with its
    // events queryable; the second's is not written yet.
    await expect.poll(async () => (await receipt(first)).state, { timeout: 30_000 }).toBe('done')
    expect(summary(await receipt(first))).toEqual({ state: 'done', accepted: 10, rejected: 0, reasons: [] })
    expect(await storedOf(first.headers.tx!)).toBe(10)
    expect(summary(await receipt(second))).toEqual({ state: 'queued', accepted: 0, rejected: 0, reasons: [] })
    expect(await storedOf(second.headers.tx!)).toBe(0)
    expect(finished).toBe(false)
    release()
    await run
    expect(summary(await receipt(second))).toEqual({
      state: 'done',
      accepted: 8,
      rejected: 2,
      reasons: ['1:duplicate', '2:duplicate'],
    })
    expect(summary(await receipt(third))).toEqual({ state: 'done', accepted: 10, rejected: 0, reasons: [] })
    // Every receipt, as it was recorded, counted what a reader found stored and listed then.
    expect(atRecording).toEqual([
      { tx: first.headers.tx, direct: 10, rejected: 0, stored: 10, listed: 0 },
      { tx: second.headers.tx, direct: 8, rejected: 2, stored: 8, listed: 2 },
      { tx: third.headers.tx, direct: 10, rejected: 0, stored: 10, listed: 0 },
    ])
  })

  it('keeps the receipts of groups recorded before a later group failed, and the retry records them all once more, storing nothing twice', async () => {
    const records = [upload(), upload(), upload()]
    const { store, atRecording } = watched({ fail: 2 })
    const splitter = splitterOver(store)
    const batch = { topic: 'uploads', partition: 0, records }
    await expect(splitter(batch)).rejects.toThrow('engine refused the insert')
    // The first group's receipt stands; the failed group has none. The third group, handed to the
    // event store before the second failed, was stored after it, with its receipt.
    expect(summary(await receipt(records[0]!))).toEqual({
      state: 'done',
      accepted: 10,
      rejected: 0,
      reasons: [],
    })
    expect(summary(await receipt(records[1]!))).toEqual({
      state: 'queued',
      accepted: 0,
      rejected: 0,
      reasons: [],
    })
    expect(await storedOf(records[1]!.headers.tx!)).toBe(0)
    expect(atRecording.map((r) => r.tx)).toEqual([records[0]!.headers.tx, records[2]!.headers.tx])
    // The batch again (the consumer's retry): the stored groups are replays (skipped, still counted
    // as this upload's), the failed one is stored; every receipt says what is stored.
    await splitter(batch)
    for (const record of records) {
      expect(summary(await receipt(record))).toEqual({
        state: 'done',
        accepted: 10,
        rejected: 0,
        reasons: [],
      })
      expect(await storedOf(record.headers.tx!)).toBe(10)
    }
    expect(atRecording.slice(2)).toEqual(
      records.map((r) => ({ tx: r.headers.tx, direct: 10, rejected: 0, stored: 10, listed: 0 })),
    )
  })

  it("inserts the next groups' events while a group's receipts are recorded, then records the receipts of the groups done meanwhile in one insert", async () => {
    const records = [upload(), upload(), upload(), upload()]
    const { store, atRecording, receiptInserts, releaseReceipts, holdingReceipts } = watched({
      holdReceipts: 1,
    })
    const splitter = splitterOver(store)
    let finished = false
    const run = splitter({ topic: 'uploads', partition: 0, records }).then(() => (finished = true))
    await holdingReceipts
    // The first group's receipts insert is held: the later groups' events are inserted meanwhile,
    // and their receipts wait for it (a receipt is never recorded before its events are stored).
    for (const record of records.slice(1))
      await expect.poll(() => storedOf(record.headers.tx!), { timeout: 30_000 }).toBe(10)
    expect(summary(await receipt(records[0]!)).state).toBe('queued')
    expect(summary(await receipt(records[3]!)).state).toBe('queued')
    expect(finished).toBe(false)
    releaseReceipts()
    await run
    // One insert for the first group, one for the three groups that asked while it was held.
    expect(receiptInserts).toEqual([[records[0]!.headers.tx], records.slice(1).map((r) => r.headers.tx)])
    for (const record of records)
      expect(summary(await receipt(record))).toEqual({
        state: 'done',
        accepted: 10,
        rejected: 0,
        reasons: [],
      })
    expect(atRecording).toEqual(
      records.map((r) => ({ tx: r.headers.tx, direct: 10, rejected: 0, stored: 10, listed: 0 })),
    )
  })
})
