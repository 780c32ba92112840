import type { RowPieces, Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import { copyRow, rowLength } from './event-block.ts'
import { RecentKeys } from './recent-keys.ts'
import { classifyBatch } from './classify-stored.ts'
import { decideScreened, Screened, screenBatch } from './screen-batch.ts'
import { EVENT_ROW_BINARY, eventKey } from './event-row.ts'
import type { KeyFilter } from './key-filter.ts'
import type { StoredKeys } from './stored-keys.ts'
import type { RejectRow } from './upload-outcomes.ts'
import type { WriterItem } from './writer-item.ts'

export interface EventStoreDeps {
  store: Store
  /**
   * This process is the only writer of `events` (the embedded engine, which one process owns):
   * an insert can be left half-done (events written, index not) only by this process's last insert
   * before a crash, or by a write that failed. Without it (Kafka + ClickHouse), another owner of a
   * partition may have crashed mid-insert, and every partition's first batch and any batch after a
   * pause looks for that.
   */
  soleWriter?: boolean
  /**
   * The keys stored so far, as a filter (embedded mode, where this process is the only writer of
   * `events`): the index is asked only about keys the filter may hold. Without it every key is
   * looked up.
   */
  storedKeys?: StoredKeys
  /** Keys the sole writer remembers having stored, for copies sent again soon (RecentKeys). */
  recentKeys?: number
  onStored?: (count: number, source: string) => void
  onDuplicate?: (count: number) => void
  /** The clock of the settle-time rule (tests move it instead of sleeping). Default Date.now. */
  now?: () => number
}

/** Where a batch of items comes from: its source partition and offsets (the insert's dedup token). */
export interface ItemSource {
  topic: string
  partition: number
  first: string
  last: string
}

/** Writes items (events) exactly once; see eventStore. */
export interface EventStore {
  /**
   * Stores the items not stored before and gives the `duplicate` rejects of the others (copies
   * from other uploads), which the caller records (with its own rejects, in one insert).
   *
   * `recorded`, if given, runs once the write's rows are inserted (so queryable), with those
   * rejects, while the next write is inserted: the caller's receipts of these rows then wait for
   * one insert, and the next write's insert does not wait for them. The write settles after it;
   * if it fails, so does the write (its rows stay stored, and a replay finds them).
   */
  write(items: readonly WriterItem[], source: ItemSource, recorded?: Recorded): Promise<RejectRow[]>
}

/** What a caller records once a write's rows are stored (its receipts), beside the next write. */
export type Recorded = (duplicates: RejectRow[]) => Promise<void>

const SETTLED_MS = 2000
/** Bytes of rows handed to the store at a time (rowPieces): ~2,700 bench events. */
const ROW_PIECE_BYTES = 1024 * 1024
// How far before a replayed batch's earliest receipt an interrupted insert's rows may lie: the
// edge stamps receipts before the durable write, so neighbouring records can be out of order by
// moments; re-split copies of uncommitted uploads are later, not earlier.
const REPAIR_MARGIN_MS = 10_000
// Blocks of `events` the sole writer's repair reads: an insert writes one per month of event_time
// it spans (at most 6 with the default windows), so this covers the last insert and then some.
const LAST_INSERT_BLOCKS = 16
// The keys the sole writer remembers having stored (~13 s at 10,000 events/s, ~14 MB: the uuid
// strings, three rings, the slots): copies sent again within seconds, by two servers or a quick
// retry. A later copy is asked of the index, as before; twice as many keys took the 10M-event
// sustained run over 1 GB of RSS.
const RECENT_KEYS = 131_072

/**
 * The settings of the event store's inserts into `events_ingest` (bench/group-cpu.ts times them).
 * One thread: on a busy engine, splitting a block between threads costs more than it saves. No
 * replacing pass over the block on its way into `event_uuid_index` (a ReplacingMergeTree): a write
 * stores each (app, uuid) once, and the index's readers take the earliest row of a key whatever its
 * merges have done; the pass cost ~0.13 µs of engine CPU per event (measured at `2b8447e`;
 * docs/performance.md, "Engine settings"). `enable_analyzer = 0`: the views this insert feeds (the
 * converting view, the index's, the Query API rollup's) are planned again for every insert, and
 * the older query analyzer plans them for ~5 ms less engine CPU per insert, ~17 % of a small
 * group's insert, with the same rows (docs/performance.md, "Freshness on an idle machine").
 */
export const EVENTS_INSERT_SETTINGS = {
  max_threads: 1,
  max_insert_threads: 1,
  optimize_on_insert: 0,
  enable_analyzer: 0,
} as const

/**
 * The exactly-once write of events: what was stored before (an earlier upload, or a batch's own
 * first attempt before a crash) is found in the store, and only the rest is inserted, in one
 * block, whose deduplication token (from the source offsets) makes an immediate retry of the same
 * block a no-op as well. Copies from other uploads become `duplicate` rejects.
 *
 * A key must have one writer at a time: two writes of the same key at once would both find it
 * missing. The writes of one EventStore are decided and inserted one at a time, in the order asked;
 * a process runs one EventStore, and where several processes write (Kafka + ClickHouse) each
 * partition of the events topic, keyed by app + uuid, has one owner. The sole writer (embedded)
 * screens and looks up a write while the one before it is inserted (docs/events.md, "Three stages
 * at once"): what that look-up could miss, the insert hands over when it ends.
 */
export function eventStore(deps: EventStoreDeps): EventStore {
  const now = deps.now ?? Date.now
  const recent =
    deps.soleWriter && deps.storedKeys ? new RecentKeys(deps.recentKeys ?? RECENT_KEYS) : undefined
  // Several owners: when each source partition's last batch was written here. A batch that follows
  // one written moments ago cannot be a replay of a half-finished insert (another owner would first
  // have to take the partition, crash, and wait out a session timeout of 6 s or more), so the
  // index alone answers.
  const settled = new Map<string, number>()
  // Sole writer: whether the index may lack what an insert left half-done (none written yet in
  // this process: the previous process may have crashed during its last one; or a write failed).
  let indexUncertain = true
  // Sole writer with the filter: writes asked for so far, and the last of them decided (or failed).
  // Decisions run in the order asked, so a write whose predecessors are all decided can repair the
  // index in its look-up stage: no insert can run meanwhile.
  let asked = 0
  let decidedThrough = 0
  // Sole writer: inserts that failed so far. A look-up that began before one failed cannot be
  // trusted even once a later write has repaired the index.
  let failedInserts = 0
  // Decisions and inserts, one write at a time, in the order asked.
  let turn: Promise<unknown> = Promise.resolve()
  // Sole writer with the filter: screening and look-ups, one write at a time, in the order asked,
  // each ahead of its turn, so a write's look-up runs while the write before it is inserted.
  let screening: Promise<unknown> = Promise.resolve()
  // Writes looked up and not yet decided: an insert that ends meanwhile gives them its keys, which
  // their look-up may have run too early to find.
  const undecided = new Set<LookedUp>()

  const outcome = () => {
    const storedItems: WriterItem[] = []
    const duplicates: RejectRow[] = []
    let server = 0
    let sdk = 0
    return {
      storedItems,
      duplicates,
      store(item: WriterItem) {
        storedItems.push(item)
        if (item.upload.source === 'sdk') sdk++
        else server++
      },
      duplicate(item: WriterItem, firstTransaction: string) {
        duplicates.push({
          transaction_id: item.upload.tx,
          org_id: item.upload.org,
          app_id: item.app,
          source: item.upload.source,
          line: item.line,
          uuid: item.uuid,
          reason: 'duplicate',
          detail: `an event with this uuid was already stored (transaction ${firstTransaction})`,
          received_at: item.upload.recv,
        })
      },
      counted() {
        if (server > 0) deps.onStored?.(server, 'server')
        if (sdk > 0) deps.onStored?.(sdk, 'sdk')
        if (duplicates.length > 0) deps.onDuplicate?.(duplicates.length)
      },
    }
  }
  type Outcome = ReturnType<typeof outcome>

  // The piece of rows being written for the insert under way (rowPieces): one for all, as inserts
  // run one at a time.
  const piece = Buffer.allocUnsafe(ROW_PIECE_BYTES)
  const insert = async (out: Outcome, source: ItemSource) => {
    if (out.storedItems.length === 0) return
    // RowBinary through `events_ingest` (migration 005), whose view converts the LowCardinality
    // columns whole.
    await deps.store.insert('events_ingest', rowPieces(out.storedItems, piece), {
      dedupToken: `${source.topic}:${source.partition}:${source.first}-${source.last}`,
      rowBinary: EVENT_ROW_BINARY,
      settings: EVENTS_INSERT_SETTINGS,
    })
  }

  /**
   * A write start to end in its turn: where several processes write (no filter, or a filter not
   * kept whole by this process alone), every batch after a pause repairs the index first.
   */
  const writeInTurn = async (items: readonly WriterItem[], source: ItemSource): Promise<RejectRow[]> => {
    const partitionKey = `${source.topic}:${source.partition}`
    const lastWritten = settled.get(partitionKey)
    settled.delete(partitionKey)
    const filter = await deps.storedKeys?.filter()
    let repaired: IndexedKey[] = []
    if (deps.soleWriter) {
      if (indexUncertain) repaired = await repairLastInserts(deps.store)
      indexUncertain = true
    } else if (lastWritten === undefined || now() - lastWritten > SETTLED_MS) {
      repaired = await repairIndex(deps.store, minReceivedAt(items) - REPAIR_MARGIN_MS)
    }
    for (const key of repaired) filter?.add(key.app_id, key.uuid)
    const out = outcome()
    if (filter) {
      const { marks, lookups } = screenBatch(items, filter)
      const stored = lookups.length > 0 ? await findStored(deps.store, lookups) : new Map()
      decide(out, items, marks, stored, filter)
    } else {
      const stored = await findStored(deps.store, items)
      for (const decision of classifyBatch(items, stored)) {
        if (decision.kind === 'store') out.store(decision.item)
        else if (decision.kind === 'duplicate') out.duplicate(decision.item, decision.firstTransaction)
      }
    }
    await insert(out, source)
    settled.set(partitionKey, now())
    indexUncertain = false
    out.counted()
    return out.duplicates
  }

  /**
   * Stage 1 of a write with the filter (sole writer): screen the batch and look its suspects up.
   * It may run while the write before it is inserted: the look-up then may miss that insert's
   * keys, which the insert hands over when it ends (`found`), or, if it fails, the decision looks
   * everything up again.
   */
  const lookUp = async (
    items: readonly WriterItem[],
    storedKeys: StoredKeys,
    seq: number,
  ): Promise<LookedUp> => {
    const filter = await storedKeys.filter()
    // Nothing being written: the index is made whole before the screening (its repairs go into
    // the filter, so a copy of a repaired key is a suspect).
    if (indexUncertain && decidedThrough === seq - 1) {
      for (const key of await repairLastInserts(deps.store)) filter.add(key.app_id, key.uuid)
      indexUncertain = false
    }
    const { marks, lookups } = screenBatch(items, filter)
    // Copies of keys this process stored recently, or is inserting now, are answered here; the
    // rest go to the index.
    const known = new Map<string, { tx: string }>()
    const recalled: WriterItem[] = []
    const ask = recent && lookups.length > 0 ? recall(lookups, recent, known, recalled) : lookups
    const looked: LookedUp = {
      filter,
      marks,
      lookups: ask,
      keys: keysOf(ask),
      uuids: new Set(ask.map((item) => item.uuid)),
      known,
      recalled,
      found: new Map(),
      stored: new Map(),
      failedInserts,
    }

    if (ask.length === 0) return looked
    undecided.add(looked)
    try {
      looked.stored = await findStored(deps.store, ask)
    } catch (err) {
      undecided.delete(looked)
      throw err
    }
    return looked
  }

  /** Stage 2: decide each item and insert, in its turn. */
  const decideAndInsert = async (
    items: readonly WriterItem[],
    source: ItemSource,
    looked: LookedUp,
  ): Promise<RejectRow[]> => {
    undecided.delete(looked)
    let stored = looked.stored
    if (indexUncertain || looked.failedInserts !== failedInserts) {
      // An insert failed since this batch was screened (its keys were in the filter by then, so
      // copies of them are suspects): the index is made whole and asked again.
      if (indexUncertain)
        for (const key of await repairLastInserts(deps.store)) looked.filter.add(key.app_id, key.uuid)
      indexUncertain = false
      // What RecentKeys answered too: it may have come from the insert that failed.
      const asked = [...looked.lookups, ...looked.recalled]
      stored = asked.length > 0 ? await findStored(deps.store, asked) : new Map<string, { tx: string }>()
    } else {
      for (const [key, first] of looked.found) if (!stored.has(key)) stored.set(key, first)
      for (const [key, first] of looked.known) stored.set(key, first)
    }
    const out = outcome()
    decide(out, items, looked.marks, stored, looked.filter)
    // Remembered before the insert ends, so that the next write, looked up meanwhile, finds its
    // copies of these keys here instead of asking the index, which cannot have them yet. If the
    // insert fails, all is forgotten, and every write looked up meanwhile asks the index again.
    if (recent) for (const item of out.storedItems) recent.add(item.app, item.uuid, item.upload.tx, h1(item))
    indexUncertain = true
    try {
      await insert(out, source)
    } catch (err) {
      failedInserts++
      recent?.forget()
      throw err
    }
    indexUncertain = false
    // Writes looked up while this one was inserted learn its keys.
    for (const other of undecided) handOver(out.storedItems, other)
    out.counted()
    return out.duplicates
  }

  /**
   * Decides a screened batch: a key the filter did not hold was never stored; the others (the
   * batch's copies of earlier uploads and of its own items, and the false positives) are decided
   * over what the index found.
   */
  const decide = (
    out: Outcome,
    items: readonly WriterItem[],
    marks: Uint8Array,
    stored: ReadonlyMap<string, { tx: string }>,
    filter: KeyFilter,
  ) => {
    const decisions = decideScreened(items, marks, stored)
    let next = 0
    for (let i = 0; i < items.length; i++) {
      if (marks[i] === Screened.New) {
        out.store(items[i]!)
        continue
      }
      const decision = decisions[next++]!
      if (decision.kind === 'store') {
        out.store(decision.item)
        // A false positive's key (New ones are in the filter already). Before the insert: if it
        // fails, the key is a false positive until a retry stores it.
        if (marks[i] === Screened.Suspect) filter.add(decision.item.app, decision.item.uuid)
      } else if (decision.kind === 'duplicate') out.duplicate(decision.item, decision.firstTransaction)
    }
  }

  return {
    write(items, source, recorded) {
      // Nothing to store: nothing its receipts must wait for.
      if (items.length === 0) return (recorded ? recorded([]) : Promise.resolve()).then(() => [])
      const storedKeys = deps.soleWriter ? deps.storedKeys : undefined
      if (!storedKeys) {
        const inserted = turn.then(() => writeInTurn(items, source))
        turn = inserted.catch(() => undefined)
        return recordedAfter(inserted, recorded)
      }
      const seq = ++asked
      const looked = screening.then(() => lookUp(items, storedKeys, seq))
      screening = looked.catch(() => undefined)
      const inserted = turn.then(() => looked).then((l) => decideAndInsert(items, source, l))
      const decided = () => {
        decidedThrough = seq
      }
      turn = inserted.then(decided, decided)
      return recordedAfter(inserted, recorded)
    },
  }
}

/**
 * A write's outcome once `recorded` has run with its duplicates: out of the write's turn, so the
 * next write is decided and inserted while this one's receipts are recorded.
 */
async function recordedAfter(inserted: Promise<RejectRow[]>, recorded: Recorded | undefined) {
  const duplicates = await inserted
  await recorded?.(duplicates)
  return duplicates
}

/** A write screened and looked up, waiting for its turn to be decided and inserted. */
interface LookedUp {
  filter: KeyFilter
  marks: Uint8Array
  /** The suspects the index is asked about (screenBatch's `lookups` less the recently stored). */
  lookups: WriterItem[]
  /** Their keys (eventKey). */
  keys: Set<string>
  /**
   * Their uuids alone: an insert that ends tests each of its items' uuid here first, so it builds
   * a key string only for the few that may be among them, not for every event it stored.
   */
  uuids: Set<string>
  /**
   * Suspects this process stored recently or is inserting now (RecentKeys), with the transaction
   * that stored each, and the items they were answered for (asked of the index after all if an
   * insert fails before the decision).
   */
  known: Map<string, { tx: string }>
  recalled: WriterItem[]
  /** Suspects stored by an insert that ended after the look-up began, with its transaction. */
  found: Map<string, { tx: string }>
  /** What the index answered. */
  stored: Map<string, { tx: string }>
  /** Inserts that had failed when it was screened. */
  failedInserts: number
}

function keysOf(items: readonly WriterItem[]): Set<string> {
  const keys = new Set<string>()
  for (const item of items) keys.add(eventKey(item.app, item.uuid))
  return keys
}

/** The key's h1 where the CPU pool hashed it (RecentKeys hashes the others). */
const h1 = (item: WriterItem): number | undefined => item.keyHash?.[2 * (item.keyIndex ?? 0)]

/** The look-ups that `recent` does not answer; those it answers go into `known` and `recalled`. */
function recall(
  lookups: readonly WriterItem[],
  recent: RecentKeys,
  known: Map<string, { tx: string }>,
  recalled: WriterItem[],
): WriterItem[] {
  const ask: WriterItem[] = []
  for (const item of lookups) {
    const tx = recent.get(item.app, item.uuid, h1(item))
    if (tx === undefined) ask.push(item)
    else {
      known.set(eventKey(item.app, item.uuid), { tx })
      recalled.push(item)
    }
  }
  return ask
}

/** The suspects of `other` that `storedItems` (an insert that just ended) hold. */
function handOver(storedItems: readonly WriterItem[], other: LookedUp): void {
  if (other.keys.size === 0) return
  for (const item of storedItems) {
    if (!other.uuids.has(item.uuid)) continue
    const key = eventKey(item.app, item.uuid)
    if (other.keys.has(key) && !other.found.has(key)) other.found.set(key, { tx: item.upload.tx })
  }
}

/**
 * The items' rows, whole or in parts, handed to the store in pieces of `piece`'s size, copied into
 * `piece` itself, which the event store reuses for every insert (its inserts run one at a time,
 * and the store is done with a piece when its promise resolves). Before `57b17cd` the rows were
 * copied into one buffer of the insert's size, reused as well: ~23 MB resident for good, for a
 * block the engine reads from a file anyway (chdb) or the HTTP client copies (ClickHouse). A fresh
 * buffer per insert before that (~15 MB for 50,000 events) was a large allocation, its pages
 * faulted in anew, and external memory that hastened garbage collections: 27-85 ms of this thread
 * between one insert's end and the next one's start. A row larger than a piece goes on its own.
 */
export function rowPieces(items: readonly WriterItem[], piece: Buffer): RowPieces {
  let bytes = 0
  for (const item of items) bytes += rowLength(item.value)
  return {
    bytes,
    async pieces(sink) {
      let at = 0
      for (const item of items) {
        const n = rowLength(item.value)
        if (at + n > piece.length && at > 0) {
          await sink(piece.subarray(0, at))
          at = 0
        }
        if (n > piece.length) {
          const row = Buffer.allocUnsafe(n)
          copyRow(item.value, row, 0)
          await sink(row)
          continue
        }
        at = copyRow(item.value, piece, at)
      }
      if (at > 0) await sink(piece.subarray(0, at))
    },
  }
}

/**
 * An INSERT writes `events` and then, through the materialized view, `event_uuid_index`: a crash in
 * between leaves events the index does not know, whether this batch replays them or a later batch
 * brings a copy. Where a replay is possible, every event received since `fromMs` that the index
 * misses is indexed first, so the index alone answers afterwards; the keys indexed are returned
 * (for the filter of stored keys). Indexing a stored event twice is harmless (the look-up takes
 * the earliest transaction), so this is safe to repeat and to race with another owner.
 */
interface IndexedKey {
  app_id: string
  uuid: string
  transaction_id: string
  received_at: string
}

async function repairIndex(store: Store, fromMs: number): Promise<IndexedKey[]> {
  const missing = await store.query<IndexedKey>(
    `SELECT app_id, uuid, transaction_id, toUnixTimestamp64Milli(received_at) AS received_at FROM events
     WHERE received_at >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
       AND (app_id, uuid) NOT IN (
         SELECT app_id, uuid FROM event_uuid_index
         WHERE (app_id, uuid) IN (
           SELECT app_id, uuid FROM events WHERE received_at >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')))`,
    { from: Math.max(0, Math.floor(fromMs)) },
  )
  return indexMissing(store, missing)
}

/**
 * The sole writer's repair: the events of the last inserts (the parts holding the newest blocks of
 * `events`; an insert is one block per month it spans) that the index misses are indexed. Only
 * this process inserts into `events`, one insert at a time, so a half-done insert is one of them.
 */
async function repairLastInserts(store: Store): Promise<IndexedKey[]> {
  const newest = `SELECT name FROM system.parts
    WHERE database = currentDatabase() AND table = 'events' AND active
      AND max_block_number > (
        SELECT max(max_block_number) FROM system.parts
        WHERE database = currentDatabase() AND table = 'events' AND active) - ${LAST_INSERT_BLOCKS}`
  const missing = await store.query<IndexedKey>(
    `SELECT app_id, uuid, transaction_id, toUnixTimestamp64Milli(received_at) AS received_at FROM events
     WHERE _part IN (${newest})
       AND (app_id, uuid) NOT IN (
         SELECT app_id, uuid FROM event_uuid_index
         WHERE (app_id, uuid) IN (SELECT app_id, uuid FROM events WHERE _part IN (${newest})))`,
  )
  return indexMissing(store, missing)
}

async function indexMissing(store: Store, missing: IndexedKey[]): Promise<IndexedKey[]> {
  if (missing.length > 0)
    await store.insert(
      'event_uuid_index',
      missing.map((row) => ({ ...row, received_at: Number(row.received_at) })),
    )
  return missing
}

function minReceivedAt(items: readonly WriterItem[]): number {
  let min = Infinity
  for (const item of items) min = Math.min(min, item.upload.recv)
  return min
}

/**
 * Which keys of the batch are already stored, and by which transaction: the dedupe index
 * (`event_uuid_index`, filled in the same INSERT by a materialized view, and made whole by
 * repairIndex wherever a replay is possible) answers for everything.
 */
async function findStored(store: Store, items: readonly WriterItem[]) {
  const apps = [...new Set(items.map((i) => i.app))]
  const uuids = [...new Set(items.map((i) => i.uuid))]
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
