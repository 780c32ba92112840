/**
 * The engine CPU of a write group's fixed costs, one small insert at a time (docs/performance.md,
 * "Freshness on an idle machine"): a one-event insert through `events_ingest` as the event store
 * writes it, its parts (`events` alone, the uuid index alone), a receipts insert, a rejects insert.
 * CPU, not wall time: the process's user + system time around N inserts of each kind, merges
 * stopped (they are each part's later cost, not the insert's), JSON serialisation included (~0.05
 * ms). Run: `node --import tsx bench/group-cpu.ts [inserts per round] [rounds] [kinds]`, kinds a
 * comma list of name prefixes (all when absent).
 */
import { rmSync } from 'node:fs'
import { ChdbStore } from '../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../pipelines/connectors/store/migrations.ts'
import type { InsertOptions } from '../pipelines/connectors/store/store.ts'
import { EVENT_ROW_BINARY, rowBinaryEventRow, type EventRow } from '../pipelines/events/event-row.ts'
import { EVENTS_INSERT_SETTINGS } from '../pipelines/events/store-events.ts'
import { receiptRow, rejectRow, stampRecorded } from '../pipelines/events/upload-outcomes.ts'
import type { UploadHeaders } from '../pipelines/events/upload-headers.ts'

const N = Number(process.argv[2] ?? 20)
const ROUNDS = Number(process.argv[3] ?? 9)
const dir = `/tmp/sluice-group-cpu-${process.pid}`

function event(i: number, recv: number): EventRow {
  return {
    app_id: 'app',
    uuid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    customer_id: `c${i % 2000}`,
    event_name: 'purchase',
    event_time: recv,
    received_at: recv,
    attributes: { item: 'sword', price: '12' },
    ltv_change: 12,
    install_uuid: 'i',
    device_uuid: 'd',
    session_uuid: 's',
    country: 'DE',
    language: 'de',
    app_version: '1.0',
    os_version: '17',
    platform: 'iOS',
    model: 'iPhone',
    device_timezone: 'Europe/Berlin',
    source: 'server',
    transaction_id: `tx-${i}`,
  }
}

const headers = (i: number, recv: number): UploadHeaders => ({
  tx: `tx-${i}`,
  org: '1',
  app: 'app',
  src: 'server',
  key: 'k',
  recv: String(recv),
  enc: 'identity',
})

/** CPU ms per call of `insert`, over N calls after 3 unmeasured ones. */
async function cpuPer(insert: (i: number) => Promise<void>): Promise<number> {
  for (let i = 0; i < 3; i++) await insert(1_000_000 + i)
  const before = process.cpuUsage()
  for (let i = 0; i < N; i++) await insert(i)
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000 / N
}

const store = await ChdbStore.open(dir)
await migrate(store)
await store.command('SYSTEM STOP MERGES')
let seq = 0
const recv = Date.now()
const eventInsert =
  (table: string, extra: InsertOptions['settings'] = {}, token = true) =>
  (i: number) =>
    store.insert(table, rowBinaryEventRow(event(seq++ * 1000 + i, recv)), {
      ...(token ? { dedupToken: `events:0:${seq}-${seq}` } : {}),
      rowBinary: EVENT_ROW_BINARY,
      settings: { ...EVENTS_INSERT_SETTINGS, ...extra },
    })
/** A group of `n` events in one insert, as the event store writes it (`analyzer` 0 or 1). */
const groupInsert = (n: number, analyzer: number) => (i: number) => {
  const rows = Buffer.concat(
    Array.from({ length: n }, (_, k) => rowBinaryEventRow(event(seq * 100_000 + i * n + k, recv))),
  )
  seq++
  return store.insert('events_ingest', rows, {
    dedupToken: `events:0:${seq}-${seq}`,
    rowBinary: EVENT_ROW_BINARY,
    settings: { ...EVENTS_INSERT_SETTINGS, enable_analyzer: analyzer },
  })
}
const receipts = (n: number) => (i: number) =>
  store.insert(
    'upload_receipts',
    stampRecorded(
      Array.from({ length: n }, (_, k) =>
        receiptRow(
          headers(seq++ * 1000 + i * 10 + k, recv),
          { lines: 1, forwarded: 1, direct: 0, rejected: 0 },
          recv,
          { consumed: recv, parsed: recv, written: recv },
        ),
      ),
      recv,
    ),
    { beside: true },
  )
const kinds: [string, (i: number) => Promise<void>][] = [
  ['events_ingest, enable_analyzer=1 (before)', eventInsert('events_ingest', { enable_analyzer: 1 })],
  ['events_ingest, enable_analyzer=0 (as written)', eventInsert('events_ingest', { enable_analyzer: 0 })],
  [
    'events_ingest, materialize_skip_indexes_on_insert=0 (not kept)',
    eventInsert('events_ingest', { materialize_skip_indexes_on_insert: 0 }),
  ],
  [
    'events_ingest, enable_analyzer=0, insert_deduplicate=0',
    eventInsert('events_ingest', { enable_analyzer: 0, insert_deduplicate: 0 }, false),
  ],
  ['events_ingest, 5,000 events, enable_analyzer=1', groupInsert(5000, 1)],
  ['events_ingest, 5,000 events, enable_analyzer=0', groupInsert(5000, 0)],
  ['events alone (its views too)', eventInsert('events')],
  [
    'event_uuid_index alone',
    (i) =>
      store.insert('event_uuid_index', [
        { app_id: 'app', uuid: `u${seq++}-${i}`, transaction_id: 't', received_at: recv },
      ]),
  ],
  ['upload_receipts, 1 row', receipts(1)],
  ['upload_receipts, 4 rows (4 groups recorded together)', receipts(4)],
  [
    'rejected_lines, 1 row',
    (i) =>
      store.insert('rejected_lines', [rejectRow(headers(seq++ * 1000 + i, recv), 1, null, 'invalid', 'x')]),
  ],
]
// Every kind once per round, rounds alternated: on a shared machine the load moves between
// rounds, so each kind's median and least of the rounds are given.
const only = process.argv[4]?.split(',')
const chosen = kinds.filter(([name]) => !only || only.some((o) => name.startsWith(o)))
const rounds = new Map<string, number[]>()
for (let r = 0; r < ROUNDS; r++)
  for (const [name, insert] of chosen) rounds.set(name, [...(rounds.get(name) ?? []), await cpuPer(insert)])
for (const [name, ms] of rounds) {
  const sorted = [...ms].sort((a, b) => a - b)
  const median = sorted[sorted.length >> 1]!
  console.log(
    `${name}: ${median.toFixed(1)} ms CPU per insert (median of ${ROUNDS}; least ${sorted[0]!.toFixed(1)})`,
  )
}
await store.close()
rmSync(dir, { recursive: true, force: true })
