import type { RecordBatch } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import { deadLetter, PermanentError, type StageReport } from '../failures/outcome.ts'
import { classifyBatch, type WriterItem } from './classify-stored.ts'
import { decodeBlock } from './event-block.ts'
import { EVENT_ROW_BINARY, eventKey } from './event-row.ts'
import type { StoredKeys } from './stored-keys.ts'
import { recordRejects, type RejectRow } from './upload-outcomes.ts'

export interface WriterDeps {
  store: Store
  /**
   * The keys stored so far, as a filter (embedded mode, where this process is the only writer of
   * `events`): the index is asked only about keys the filter may hold. Without it every key is
   * looked up.
   */
  storedKeys?: StoredKeys
  onStored?: (count: number, source: string) => void
  onDuplicate?: (count: number) => void
  /** The clock of the settle-time rule (tests move it instead of sleeping). Default Date.now. */
  now?: () => number
}

const SETTLED_MS = 2000
// How far before a replayed batch's earliest receipt an interrupted insert's rows may lie: the
// edge stamps receipts before the durable write, so neighbouring records can be out of order by
// moments; re-split copies of uncommitted uploads are later, not earlier.
const REPAIR_MARGIN_MS = 10_000

/**
 * Stage 2 of ingestion: the single owner of a partition of (app, uuid) keys stores each event once.
 * Events arrive in blocks routed by app + uuid, so no other consumer can be storing the same uuid at the same
 * time; what was stored before (an earlier upload, or this batch's own first attempt before a crash)
 * is found in the store, and only the rest is inserted, in one block. The insert's deduplication
 * token (from the source offsets) makes an immediate retry of the same block a no-op as well.
 */
export function eventsWriter(deps: WriterDeps) {
  const now = deps.now ?? Date.now
  // When each partition's last batch was written here. A batch that follows one written moments ago
  // cannot be a replay of a half-finished insert (another owner would first have to take the
  // partition, crash, and wait out a session timeout of 6 s or more), so the index alone answers.
  const settled = new Map<string, number>()
  return async (batch: RecordBatch): Promise<StageReport> => {
    const { items, report } = decodeBatch(batch)
    if (items.length === 0) return report
    const partitionKey = `${batch.topic}:${batch.partition}`
    const lastWritten = settled.get(partitionKey)
    const replayPossible = lastWritten === undefined || now() - lastWritten > SETTLED_MS
    settled.delete(partitionKey)
    const filter = await deps.storedKeys?.filter()
    if (replayPossible) {
      const repaired = await repairIndex(deps.store, minReceivedAt(items) - REPAIR_MARGIN_MS)
      for (const key of repaired) filter?.add(key.app_id, key.uuid)
    }
    // A key the filter does not hold was never stored: only the others need the index (the
    // batch's copies of earlier uploads, and ~1 % false positives).
    const candidates = filter ? items.filter((i) => filter.mightContain(i.headers.a, i.headers.u)) : items
    const stored = candidates.length > 0 ? await findStored(deps.store, candidates) : new Map()
    const decisions = classifyBatch(items, stored)
    const toStore: Buffer[] = []
    const duplicates: RejectRow[] = []
    const counts = new Map<string, number>()
    for (const decision of decisions) {
      if (decision.kind === 'store') {
        toStore.push(decision.item.value)
        // Before the insert: if it fails, the key is a false positive until a retry stores it.
        filter?.add(decision.item.headers.a, decision.item.headers.u)
        const source = decision.item.headers.s
        counts.set(source, (counts.get(source) ?? 0) + 1)
      } else if (decision.kind === 'duplicate') {
        const h = decision.item.headers
        duplicates.push({
          transaction_id: h.t,
          org_id: Number(h.o),
          app_id: h.a,
          source: h.s,
          line: Number(h.l),
          uuid: h.u,
          reason: 'duplicate',
          detail: `an event with this uuid was already stored (transaction ${decision.firstTransaction})`,
          received_at: Number(h.r),
        })
      }
    }
    const first = batch.records[0]!.offset
    const last = batch.records[batch.records.length - 1]!.offset
    if (toStore.length > 0) {
      // RowBinary through `events_ingest` (migration 005), whose view converts the LowCardinality
      // columns whole. One thread: on a busy engine, splitting a block between threads costs more
      // than it saves.
      await deps.store.insert('events_ingest', Buffer.concat(toStore), {
        dedupToken: `${batch.topic}:${batch.partition}:${first}-${last}`,
        rowBinary: EVENT_ROW_BINARY,
        settings: { max_threads: 1, max_insert_threads: 1 },
      })
    }
    await recordRejects(deps.store, duplicates)
    settled.set(partitionKey, now())
    for (const [source, n] of counts) deps.onStored?.(n, source)
    if (duplicates.length > 0) deps.onDuplicate?.(duplicates.length)
    return report
  }
}

/**
 * Each record decoded on its own: a block that does not decode can never be written, so it is
 * reported as a dead letter (kept with its error) instead of failing, on every attempt, the whole
 * batch and the partition behind it.
 */
function decodeBatch(batch: RecordBatch): { items: WriterItem[]; report: StageReport } {
  const items: WriterItem[] = []
  const report: StageReport = { outcomes: [] }
  for (const record of batch.records) {
    let decoded: WriterItem[]
    try {
      decoded = decodeBlock(record.value)
    } catch (err) {
      const error = new PermanentError('undecodable event block', { cause: err })
      report.outcomes.push({ record, outcome: deadLetter(error) })
      continue
    }
    for (const item of decoded) items.push(item)
  }
  return { items, report }
}

/**
 * An INSERT writes `events` and then, through the materialized view, `event_uuid_index`: a crash in
 * between leaves events the index does not know, whether this batch replays them or a later batch
 * brings a copy. Where a replay is possible, every event received since `fromMs` that the index
 * misses is indexed first, so the index alone answers afterwards; the keys indexed are returned
 * (for the filter of stored keys). Indexing a stored event twice is harmless (the look-up takes
 * the earliest transaction), so this is safe to repeat and to race with another owner.
 */
async function repairIndex(store: Store, fromMs: number) {
  const missing = await store.query<{
    app_id: string
    uuid: string
    transaction_id: string
    received_at: string
  }>(
    `SELECT app_id, uuid, transaction_id, toUnixTimestamp64Milli(received_at) AS received_at FROM events
     WHERE received_at >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
       AND (app_id, uuid) NOT IN (
         SELECT app_id, uuid FROM event_uuid_index
         WHERE (app_id, uuid) IN (
           SELECT app_id, uuid FROM events WHERE received_at >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')))`,
    { from: Math.max(0, Math.floor(fromMs)) },
  )
  if (missing.length > 0)
    await store.insert(
      'event_uuid_index',
      missing.map((row) => ({ ...row, received_at: Number(row.received_at) })),
    )
  return missing
}

function minReceivedAt(items: readonly WriterItem[]): number {
  let min = Infinity
  for (const item of items) min = Math.min(min, Number(item.headers.r))
  return min
}

/**
 * Which keys of the batch are already stored, and by which transaction: the dedupe index
 * (`event_uuid_index`, filled in the same INSERT by a materialized view, and made whole by
 * repairIndex wherever a replay is possible) answers for everything.
 */
async function findStored(store: Store, items: readonly WriterItem[]) {
  const apps = [...new Set(items.map((i) => i.headers.a))]
  const uuids = [...new Set(items.map((i) => i.headers.u))]
  const uuidSet = stringSet('uuids', uuids)
  const rows = await store.query<{ app_id: string; uuid: string; tx: string }>(
    `SELECT app_id, uuid, argMin(transaction_id, received_at) AS tx FROM event_uuid_index
     WHERE app_id IN {apps:Array(String)} AND uuid IN ${uuidSet.sql}
     GROUP BY app_id, uuid`,
    { apps, uuids: uuidSet.value },
  )
  // With several apps the result may hold an app's row for a uuid the batch sent to another app:
  // a key no item has, so classifyBatch never looks it up.
  return new Map(rows.map((row) => [eventKey(row.app_id, row.uuid), { tx: row.tx }]))
}
