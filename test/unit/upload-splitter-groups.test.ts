import { gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import type { Bus, BusRecord } from '../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import runTask, { type CpuResult, type CpuRunner, type CpuTask } from '../../pipelines/cpu/tasks.ts'
import type { EventStore, Recorded } from '../../pipelines/events/store-events.ts'
import type { RejectRow } from '../../pipelines/events/upload-outcomes.ts'
import {
  EVENTS_PER_WRITE,
  NEXT_BATCH_PARSE_BYTES,
  PARSE_AHEAD_BYTES,
  parsedSize,
  serverUploadSplitter,
} from '../../pipelines/events/upload-splitter.ts'
import { lines, SCHEMA_URL, uuid } from '../helpers/ingestion-scenario.ts'
import type { WriterItem } from '../../pipelines/events/writer-item.ts'

const APP = 'groups-app'
const DEVICE = {
  install_uuid: 'i-1',
  device_uuid: 'd-1',
  session_uuid: 's-1',
  country: 'nl',
  language: 'nl',
  app_version: '1.0',
  os_version: '17',
  platform: 'ios',
  model: 'm',
  device_timezone: 'Europe/Amsterdam',
}

/** The real CPU task, run on the next turn, counting the tasks started and not yet finished. */
function countingPool() {
  const pool = {
    started: 0,
    running: 0,
    maxRunning: 0,
    run(task: CpuTask): Promise<CpuResult> {
      pool.started++
      pool.running++
      pool.maxRunning = Math.max(pool.maxRunning, pool.running)
      return new Promise((resolve) =>
        setImmediate(() => {
          pool.running--
          resolve(runTask(task))
        }),
      )
    },
  }
  return pool satisfies CpuRunner
}

/** A store that knows one customer's device and keeps what is inserted into it. */
function recordingStore() {
  const inserted = new Map<string, object[]>()
  const store = {
    kind: 'chdb' as const,
    command: () => Promise.resolve(),
    query: <T>(): Promise<T[]> => Promise.resolve([{ app_id: APP, customer_id: 'carol', ...DEVICE }] as T[]),
    queryStream: () => {
      throw new Error('not used')
    },
    insert: (table: string, rows: readonly object[] | Buffer) => {
      if (!Buffer.isBuffer(rows)) inserted.set(table, [...(inserted.get(table) ?? []), ...rows])
      return Promise.resolve()
    },
    ping: () => Promise.resolve(true),
    close: () => Promise.resolve(),
  }
  return { store: store satisfies Store, inserted }
}

/** `store` with its queries (the device look-ups, one per group attributed) counted. */
function countingLookups(store: Store) {
  const counted = { lookups: 0, store: store }
  counted.store = {
    ...store,
    query: <T>(...args: Parameters<Store['query']>) => {
      counted.lookups++
      return store.query<T>(...args)
    },
  }
  return counted
}

/**
 * A write's end as the event store gives it: its `recorded` work (the splitter's receipts of the
 * write) runs once the rows are stored, before the write settles, and its failure is the write's.
 */
async function stored(duplicates: RejectRow[], recorded: Recorded | undefined): Promise<RejectRow[]> {
  await recorded?.(duplicates)
  return duplicates
}

/** An event store whose writes wait until the test lets each one end (`done`). */
function heldWrites(lookupsNow: () => number) {
  const pending: {
    uuids: string[]
    first: string
    last: string
    lookupsAtStart: number
    done: () => void
  }[] = []
  const events: EventStore = {
    write(items, source, recorded) {
      return new Promise<RejectRow[]>((resolve, reject) =>
        pending.push({
          uuids: items.map((i) => i.uuid),
          first: source.first,
          last: source.last,
          lookupsAtStart: lookupsNow(),
          done: () => void stored([], recorded).then(resolve, reject),
        }),
      )
    },
  }
  return { pending, events }
}

/** The uuids the records' bodies carry, in order. */
function uuidsOf(records: readonly BusRecord[]): string[] {
  return records.flatMap((r) =>
    r.value
      .toString()
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { uuid: string }).uuid),
  )
}

/** Lets the splitter run until it waits on something the test holds. */
async function settle(): Promise<void> {
  for (let n = 0; n < 200; n++) await new Promise((r) => setImmediate(r))
}

/** The splitter over a pool, a store and an event store, as every test here builds it. */
function splitterOf(pool: CpuRunner, store: Store, events: EventStore, bus?: Bus) {
  return serverUploadSplitter({
    pool,
    store,
    bus: bus ?? ({ lag: () => Promise.resolve(0) } as unknown as Bus),
    apps: { getApp: () => Promise.resolve({ org_id: 1 }) },
    forward: { events },
    sdk: { group: 'g', topic: 't', waitMs: 0 },
    pastWindowMs: 3_600_000,
    futureWindowMs: 3_600_000,
    maxInflatedBytes: 64 * 1024 * 1024,
  })
}

function upload(offset: number, events: number): BusRecord {
  const now = Date.now()
  const body = lines(
    Array.from({ length: events }, (_, i) => ({
      schema_url: SCHEMA_URL,
      app_uuid: APP,
      customer_id: 'carol',
      event_name: `e${i % 7}`,
      event_time: now,
      uuid: uuid(),
      attributes: { a: 'x'.repeat(100), b: 'y'.repeat(100) },
    })),
  )
  return {
    topic: 'uploads',
    partition: 0,
    offset: String(offset),
    key: null,
    value: Buffer.from(body),
    headers: { tx: `tx-${offset}`, org: '1', key: 'k', recv: String(now), enc: 'identity', src: 'server' },
    timestamp: now,
  }
}

describe('upload splitter: groups and parsing ahead', () => {
  it('writes a batch in groups of about EVENTS_PER_WRITE events, parsing only a little ahead, each event once with its receipt', async () => {
    // 40 uploads of 5,000 events (~1.3 MB each): 200,000 events, more than one group.
    const perUpload = 5_000
    const records = Array.from({ length: 40 }, (_, i) => upload(i, perUpload))
    expect(records[0]!.value.length).toBeGreaterThan(PARSE_AHEAD_BYTES)
    const pool = countingPool()
    const { store, inserted } = recordingStore()
    const writes: { uuids: string[]; first: string; last: string; startedBefore: number }[] = []
    const events: EventStore = {
      write(items: readonly WriterItem[], source, recorded) {
        writes.push({
          uuids: items.map((i) => i.uuid),
          first: source.first,
          last: source.last,
          startedBefore: pool.started,
        })
        return stored([], recorded)
      },
    }
    const bus = { lag: () => Promise.resolve(0) } as unknown as Bus
    // Rows per receipts insert.
    const receiptInserts: number[] = []
    const insert = store.insert
    store.insert = (table, rows) => {
      if (table === 'upload_receipts' && Array.isArray(rows)) receiptInserts.push(rows.length)
      return insert(table, rows)
    }
    const splitter = splitterOf(pool, store, events, bus)
    await splitter({ topic: 'uploads', partition: 0, records })

    // Groups: each reaches EVENTS_PER_WRITE (the last may be smaller), in offset order.
    const groupUploads = Math.ceil(EVENTS_PER_WRITE / perUpload)
    expect(writes.map((w) => w.uuids.length)).toEqual(
      Array.from(
        { length: Math.ceil(40 / groupUploads) },
        (_, i) => Math.min(groupUploads, 40 - i * groupUploads) * perUpload,
      ),
    )
    expect(writes.map((w) => [w.first, w.last])).toEqual(
      writes.map((_, i) => [String(i * groupUploads), String(Math.min(40, (i + 1) * groupUploads) - 1)]),
    )
    // Each upload's uuids once, in order.
    const sent = uuidsOf(records)
    expect(writes.flatMap((w) => w.uuids)).toEqual(sent)
    // Parsing ran ahead of each write by one upload here (each is larger than PARSE_AHEAD_BYTES),
    // never the whole batch at once.
    expect(writes.map((w) => w.startedBefore)).toEqual(
      writes.map((_, i) => Math.min(40, (i + 1) * groupUploads + 1)),
    )
    expect(pool.maxRunning).toBeLessThanOrEqual(2)
    // One receipt per upload, every line stored by the splitter itself: counted as `direct`.
    const receipts = (inserted.get('upload_receipts') ?? []) as {
      transaction_id: string
      forwarded: number
      direct: number
    }[]
    expect(receipts.map((r) => [r.transaction_id, r.forwarded, r.direct])).toEqual(
      records.map((r) => [r.headers.tx, 0, perUpload]),
    )
    // Each receipt says when its stages were done with it, in the pipeline's order; the uploads
    // of one group share its attribution, its write and its receipts' moment, recorded once per
    // group (one receipts insert each, in order), not once the whole batch is written.
    const stamped = receipts as unknown as Record<string, number>[]
    for (const r of stamped) {
      const moments = [r.consumed_at, r.parsed_at, r.processed_at, r.written_at, r.recorded_at]
      expect(moments.every((m) => typeof m === 'number')).toBe(true)
      expect(moments).toEqual([...moments].sort((a, b) => a! - b!))
    }
    expect(receiptInserts).toEqual(writes.map((_, i) => Math.min(groupUploads, 40 - i * groupUploads)))
    expect(new Set(stamped.map((r) => r.written_at)).size).toBeLessThanOrEqual(writes.length)
    expect(stamped.at(-1)!.written_at).toBeGreaterThanOrEqual(stamped[0]!.written_at!)
  })

  it('counts the writer duplicates of events it stored itself in the receipt of each upload, nothing forwarded', async () => {
    const records = [upload(0, 10), upload(1, 10), upload(2, 10)]
    const { store, inserted } = recordingStore()
    // The store finds 3 events of the second upload and 1 of the third stored by another upload.
    const events: EventStore = {
      write(items: readonly WriterItem[], _source, recorded) {
        const copies = [
          ...items.filter((i) => i.upload.tx === 'tx-1').slice(0, 3),
          ...items.filter((i) => i.upload.tx === 'tx-2').slice(0, 1),
        ]
        return stored(
          copies.map((i) => ({
            transaction_id: i.upload.tx,
            org_id: 1,
            app_id: i.app,
            source: 'server' as const,
            line: i.line,
            uuid: i.uuid,
            reason: 'duplicate',
            detail: 'an event with this uuid was already stored (transaction tx-other)',
            received_at: i.upload.recv,
          })),
          recorded,
        )
      },
    }
    const splitter = splitterOf(countingPool(), store, events)
    await splitter({ topic: 'uploads', partition: 0, records })
    const receipts = (inserted.get('upload_receipts') ?? []) as {
      transaction_id: string
      lines: number
      forwarded: number
      direct: number
      rejected: number
    }[]
    expect(receipts.map((r) => [r.transaction_id, r.lines, r.forwarded, r.direct, r.rejected])).toEqual([
      ['tx-0', 10, 0, 10, 0],
      ['tx-1', 10, 0, 7, 3],
      ['tx-2', 10, 0, 9, 1],
    ])
    // The duplicates are recorded as rejected lines of their uploads, for the receipt to list.
    const rejected = (inserted.get('rejected_lines') ?? []) as { transaction_id: string; reason: string }[]
    expect(rejected.map((r) => [r.transaction_id, r.reason])).toEqual([
      ['tx-1', 'duplicate'],
      ['tx-1', 'duplicate'],
      ['tx-1', 'duplicate'],
      ['tx-2', 'duplicate'],
    ])
  })

  it('parses the uploads that follow a batch on the log while it is written, once each, within NEXT_BATCH_PARSE_BYTES', async () => {
    const small = Array.from({ length: 6 }, (_, i) => upload(i, 10))
    const large = Array.from({ length: 10 }, (_, i) => upload(6 + i, 5_000))
    // The large uploads that go while the second batch is written: as many as the bound holds.
    let early = 0
    for (let bytes = 0; bytes + large[early]!.value.length <= NEXT_BATCH_PARSE_BYTES; early++)
      bytes += large[early]!.value.length
    expect(early).toBeGreaterThan(1)
    expect(early).toBeLessThan(large.length)
    const pool = countingPool()
    const { store, inserted } = recordingStore()
    const written: string[] = []
    const startedAtWrite: number[] = []
    const events: EventStore = {
      write(items: readonly WriterItem[], _source, recorded) {
        startedAtWrite.push(pool.started)
        for (const i of items) written.push(i.uuid)
        return stored([], recorded)
      },
    }
    const splitter = splitterOf(pool, store, events)
    const all = [...small, ...large]
    // What the local log's consumer offers: the records after the batch (or from `start`), within
    // its batch limits (the next batch ends at `to`) and the bytes asked for. Each record handed
    // out is noted: it is a copy of its body that the splitter should not ask for twice.
    const handedOut: string[] = []
    const aheadOf = (from: number, to: number) => (maxBytes: number, start?: string) => {
      const out: BusRecord[] = []
      let bytes = 0
      for (const r of all.slice(start === undefined ? from : Number(start), to)) {
        if (out.length > 0 && bytes + r.value.length > maxBytes) break
        out.push(r)
        bytes += r.value.length
      }
      handedOut.push(...out.map((r) => r.offset))
      return out
    }
    // The first batch's write starts with its own 3 uploads and the next batch's 3 with the pool,
    // which are then written early, during the first batch.
    await splitter({ topic: 'uploads', partition: 0, records: small.slice(0, 3), ahead: aheadOf(3, 6) })
    await settle()
    expect(startedAtWrite).toEqual([6, 6])
    expect(pool.started).toBe(6)
    // The second batch was written already; the first large uploads of the third go to the pool,
    // as many as NEXT_BATCH_PARSE_BYTES holds (the consumer offers no more than asked for), and
    // are written early in their turn.
    await splitter({ topic: 'uploads', partition: 0, records: small.slice(3), ahead: aheadOf(6, 16) })
    await settle()
    expect(startedAtWrite).toEqual([6, 6, 6 + early])
    expect(pool.started).toBe(6 + early)
    await splitter({ topic: 'uploads', partition: 0, records: large, ahead: aheadOf(16, 16) })
    expect(startedAtWrite).toEqual([6, 6, 6 + early, 16])
    // Each upload parsed once, each event written once, in order, with its receipt; and each
    // record looked at ahead was read once (the looks after a group read past what the pool has).
    expect(pool.started).toBe(16)
    expect(handedOut).toEqual([...new Set(handedOut)])
    expect(handedOut.length).toBeGreaterThanOrEqual(3 + early)
    const sent = uuidsOf(all)
    expect(written).toEqual(sent)
    const receipts = (inserted.get('upload_receipts') ?? []) as { transaction_id: string; direct: number }[]
    expect(receipts.map((r) => [r.transaction_id, r.direct])).toEqual(
      all.map((r, i) => [r.headers.tx, i < 6 ? 10 : 5_000]),
    )
  })

  it('drops parses of records a batch does not deliver, and parses what it does', async () => {
    const records = Array.from({ length: 4 }, (_, i) => upload(i, 10))
    const pool = countingPool()
    const { store, inserted } = recordingStore()
    const splitter = splitterOf(pool, store, { write: (_items, _source, recorded) => stored([], recorded) })
    // The first delivery looks ahead to records 1-2; then record 0 is delivered again (a retry) and
    // only then records 1-3: the early parses are gone with the retry, so they are parsed anew.
    let looks = 0
    // The later looks (before the early write, and after the batch's write) find record 2 arrived
    // as well: it goes to the pool too.
    const ahead = () => (++looks === 1 ? [records[1]!] : [records[1]!, records[2]!])
    await splitter({ topic: 'uploads', partition: 0, records: [records[0]!], ahead })
    expect([looks, pool.started]).toEqual([3, 3])
    await splitter({ topic: 'uploads', partition: 0, records: [records[0]!] })
    await splitter({ topic: 'uploads', partition: 0, records: records.slice(1) })
    expect(pool.started).toBe(7)
    const receipts = (inserted.get('upload_receipts') ?? []) as { transaction_id: string; direct: number }[]
    // The early write of 1-2 recorded their receipts as it ended; the retry and the later batch
    // record the same counts again (a replay: the same rows, which the table keeps once).
    expect(receipts.map((r) => [r.transaction_id, r.direct])).toEqual(
      ['tx-0', 'tx-1', 'tx-2', 'tx-0', 'tx-1', 'tx-2', 'tx-3'].map((tx) => [tx, 10]),
    )
  })

  it('attributes and hands over the next group while a group is written, at most two writes outstanding, in order', async () => {
    // 3 groups of EVENTS_PER_WRITE events.
    const perUpload = EVENTS_PER_WRITE / 2
    const records = Array.from({ length: 6 }, (_, i) => upload(i, perUpload))
    const { store, inserted } = recordingStore()
    const counted = countingLookups(store)
    const { pending, events } = heldWrites(() => counted.lookups)
    const splitter = splitterOf(countingPool(), counted.store, events)
    let finished = false
    const run = splitter({ topic: 'uploads', partition: 0, records }).then(() => (finished = true))
    await settle()
    // Group 1 is being written; group 2 was parsed and attributed meanwhile, and handed to the
    // store (which looks its keys up while it inserts group 1); group 3 waits for write 1.
    expect(pending.map((w) => w.first)).toEqual(['0', '2'])
    expect(counted.lookups).toBe(2)
    pending[0]!.done()
    await settle()
    expect(pending.map((w) => w.first)).toEqual(['0', '2', '4'])
    expect(counted.lookups).toBe(3)
    pending[1]!.done()
    await settle()
    expect(finished).toBe(false)
    pending[2]!.done()
    await run
    expect(pending.map((w) => w.lookupsAtStart)).toEqual([1, 2, 3])
    const receipts = (inserted.get('upload_receipts') ?? []) as { transaction_id: string }[]
    expect(receipts.map((r) => r.transaction_id)).toEqual(records.map((r) => r.headers.tx))
  })

  it("writes the next batch's first uploads while a batch's last group is written, and the next batch takes that write as its first group", async () => {
    const records = Array.from({ length: 5 }, (_, i) => upload(i, 10))
    const { store, inserted } = recordingStore()
    // Device look-ups: one per group attributed.
    const counted = countingLookups(store)
    const { pending, events } = heldWrites(() => counted.lookups)
    const splitter = splitterOf(countingPool(), counted.store, events)
    // Batch 1: records 0-1; the log already holds 2-3 (record 4 comes later).
    let firstDone = false
    const first = splitter({
      topic: 'uploads',
      partition: 0,
      records: records.slice(0, 2),
      ahead: () => records.slice(2, 4),
    }).then(() => (firstDone = true))
    await settle()
    // Its one group is being written; meanwhile 2-3 were parsed, attributed (a second look-up)
    // and handed to the event store, which writes them after it.
    expect(pending.map((w) => [w.first, w.last])).toEqual([
      ['0', '1'],
      ['2', '3'],
    ])
    expect(counted.lookups).toBe(2)
    pending[0]!.done()
    await first
    // Batch 1's receipts are its own uploads' alone; the early write is batch 2's.
    expect(firstDone).toBe(true)
    expect(
      ((inserted.get('upload_receipts') ?? []) as { transaction_id: string }[]).map((r) => r.transaction_id),
    ).toEqual(['tx-0', 'tx-1'])
    // Batch 2: records 2-4. 2-3 are written already; 4 is attributed and written after them, and
    // the batch ends only once both writes have.
    let secondDone = false
    const second = splitter({ topic: 'uploads', partition: 0, records: records.slice(2) }).then(
      () => (secondDone = true),
    )
    await settle()
    expect(pending.map((w) => [w.first, w.last])).toEqual([
      ['0', '1'],
      ['2', '3'],
      ['4', '4'],
    ])
    expect(counted.lookups).toBe(3)
    pending[2]!.done()
    await settle()
    expect(secondDone).toBe(false)
    // Each write records its receipts as it ends, whatever the batch waits for.
    const receiptTxs = () =>
      ((inserted.get('upload_receipts') ?? []) as { transaction_id: string }[]).map((r) => r.transaction_id)
    expect(receiptTxs()).toEqual(['tx-0', 'tx-1', 'tx-4'])
    pending[1]!.done()
    await second
    const sent = uuidsOf(records)
    expect(pending.flatMap((w) => w.uuids)).toEqual(sent)
    const receipts = (inserted.get('upload_receipts') ?? []) as { transaction_id: string; direct: number }[]
    expect(receipts.map((r) => [r.transaction_id, r.direct])).toEqual(
      [0, 1, 4, 2, 3].map((i) => [records[i]!.headers.tx, 10]),
    )
  })

  it('does not use an early write for a batch that does not start with its uploads (a retry): they are written afresh', async () => {
    const records = Array.from({ length: 4 }, (_, i) => upload(i, 10))
    const { store, inserted } = recordingStore()
    const writes: [string, string][] = []
    const splitter = splitterOf(countingPool(), store, {
      write(_items, source, recorded) {
        writes.push([source.first, source.last])
        return stored([], recorded)
      },
    })
    // Batch 1 (record 0) writes 1-2 early; then record 0 is delivered again (a retry), and only
    // then 1-3: the early write is not theirs, and 1-3 are attributed and written afresh (the
    // event store finds what the early write stored as the same uploads' own: a replay).
    await splitter({
      topic: 'uploads',
      partition: 0,
      records: [records[0]!],
      ahead: () => records.slice(1, 3),
    })
    await splitter({ topic: 'uploads', partition: 0, records: [records[0]!] })
    await splitter({ topic: 'uploads', partition: 0, records: records.slice(1) })
    expect(writes).toEqual([
      ['0', '0'],
      ['1', '2'],
      ['0', '0'],
      ['1', '3'],
    ])
    const receipts = (inserted.get('upload_receipts') ?? []) as { transaction_id: string }[]
    // The early write recorded the receipts of 1-2 once stored; their write afresh records them again.
    expect(receipts.map((r) => r.transaction_id)).toEqual([
      'tx-0',
      'tx-1',
      'tx-2',
      'tx-0',
      'tx-1',
      'tx-2',
      'tx-3',
    ])
  })

  it('fails the batch that takes a failed early write, with no receipt; its retry writes the uploads afresh', async () => {
    const records = Array.from({ length: 3 }, (_, i) => upload(i, 10))
    const { store, inserted } = recordingStore()
    const writes: [string, string][] = []
    let failNext = false
    const splitter = splitterOf(countingPool(), store, {
      write(_items, source, recorded) {
        writes.push([source.first, source.last])
        if (source.first === '1' && !failNext) {
          failNext = true
          return Promise.reject(new Error('engine down'))
        }
        return stored([], recorded)
      },
    })
    // Batch 1 ends well; its early write of 1-2 fails.
    await splitter({ topic: 'uploads', partition: 0, records: [records[0]!], ahead: () => records.slice(1) })
    await expect(splitter({ topic: 'uploads', partition: 0, records: records.slice(1) })).rejects.toThrow(
      'engine down',
    )
    expect(
      ((inserted.get('upload_receipts') ?? []) as { transaction_id: string }[]).map((r) => r.transaction_id),
    ).toEqual(['tx-0'])
    await splitter({ topic: 'uploads', partition: 0, records: records.slice(1) })
    expect(writes).toEqual([
      ['0', '0'],
      ['1', '2'],
      ['1', '2'],
    ])
    expect(
      ((inserted.get('upload_receipts') ?? []) as { transaction_id: string }[]).map((r) => r.transaction_id),
    ).toEqual(['tx-0', 'tx-1', 'tx-2'])
  })

  it('drain waits for the writes started ahead of a batch', async () => {
    const records = Array.from({ length: 3 }, (_, i) => upload(i, 10))
    const { store } = recordingStore()
    const { pending, events } = heldWrites(() => 0)
    const splitter = splitterOf(countingPool(), store, events)
    const first = splitter({
      topic: 'uploads',
      partition: 0,
      records: [records[0]!],
      ahead: () => records.slice(1),
    })
    await settle()
    expect(pending.map((w) => w.first)).toEqual(['0', '1'])
    pending[0]!.done()
    await first
    // The batch is done (and would be committed); the early write of 1-2 is not.
    let drained = false
    const drain = splitter.drain().then(() => (drained = true))
    await settle()
    expect(drained).toBe(false)
    pending[1]!.done()
    await drain
    expect(drained).toBe(true)
  })

  it('fails the whole batch when a group cannot be written, after the write in flight ends, with no receipt of the failed group', async () => {
    const perUpload = EVENTS_PER_WRITE / 2
    const records = Array.from({ length: 6 }, (_, i) => upload(i, perUpload))
    const { store, inserted } = recordingStore()
    const started: string[] = []
    const events: EventStore = {
      write(_items, source, recorded) {
        started.push(source.first)
        return source.first === '0' ? Promise.reject(new Error('engine down')) : stored([], recorded)
      },
    }
    const splitter = splitterOf(countingPool(), store, events)
    await expect(splitter({ topic: 'uploads', partition: 0, records })).rejects.toThrow('engine down')
    // The second group was attributed and handed over during the first write; the third never.
    expect(started).toEqual(['0', '2'])
    // The second group was stored, so its receipts say so; the first group's uploads have none.
    expect(
      ((inserted.get('upload_receipts') ?? []) as { transaction_id: string }[]).map((r) => r.transaction_id),
    ).toEqual(['tx-2', 'tx-3'])
    expect(inserted.get('rejected_lines')).toBeUndefined()
  })

  it('counts a gzip body at its inflated size against NEXT_BATCH_PARSE_BYTES, within the inflate limit', () => {
    const plain = upload(0, 100)
    const gz = { ...plain, value: gzipSync(plain.value), headers: { ...plain.headers, enc: 'gzip' } }
    expect(gz.value.length).toBeLessThan(plain.value.length / 2)
    expect(parsedSize(plain, 1 << 30)).toBe(plain.value.length)
    expect(parsedSize(gz, 1 << 30)).toBe(plain.value.length)
    expect(parsedSize(gz, 1000)).toBe(1000)
  })
})
