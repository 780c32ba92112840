import type { Bus, BusRecord, RecordBatch } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import type { CpuRunner } from '../cpu/tasks.ts'
import { attributeEvent, isAttributionReject, serverRows } from './attribute-event.ts'
import type { DeviceCache } from './device-cache.ts'
import { customerKey, lookupDevices, waitForSdkBacklog } from './device-lookup.ts'
import { blockMessages, eventPartitions, type BlockEvent } from './event-block.ts'
import { appOf, noPackedEvents, type DeviceDims, type PackedEvents } from './event-row.ts'
import { outcomeRecorder } from './outcome-recorder.ts'
import {
  MAX_REJECTED_LINES_PER_UPLOAD,
  receiptRow,
  rejectRow,
  type ReceiptRow,
  type RejectRow,
} from './upload-outcomes.ts'
import type { EventStore } from './store-events.ts'
import type { UploadHeaders } from './upload-headers.ts'
import type { RowParts, UploadRef, WriterItem } from './writer-item.ts'

/** The one thing the splitter asks of the control plane. */
export interface AppDirectory {
  getApp(appId: string): Promise<{ org_id: number } | undefined>
}

export interface SplitterDeps {
  pool: CpuRunner
  store: Store
  bus: Bus
  /** Which org owns an app (the control store, through its cache). */
  apps: AppDirectory
  /**
   * Where the attributed events go: onto the events topic, to the writer that owns their keys; or,
   * where this process is the only writer of `events` (the embedded engine), straight to the
   * EventStore, which the events topic's writer shares (one writer of a key at a time).
   */
  forward: { topic: string } | { events: EventStore }
  /**
   * Customers' devices remembered between groups: only where this process is the only writer of
   * `customer_devices` (the embedded engine), and only if the SDK builder is given the same cache.
   */
  devices?: DeviceCache
  /** The SDK pipeline whose backlog must be applied before a customer is declared unknown. */
  sdk: { group: string; topic: string; waitMs: number }
  pastWindowMs: number
  futureWindowMs: number
  maxInflatedBytes: number
  onRejected?: (reason: string, count: number) => void
  /** Events written at once, at most (default EVENTS_PER_WRITE; tests write groups of a few). */
  eventsPerWrite?: number
}

interface ParsedUpload {
  record: BusRecord
  headers: UploadHeaders
  events: PackedEvents
  /** The first rejected lines (at most MAX_REJECTED_LINES_PER_UPLOAD). */
  rejects: RejectRow[]
  /** Every rejected line. */
  rejected: number
  lines: number
  /** When its body went to the CPU pool, and when its events came back (epoch ms, its receipt's). */
  consumedAt: number
  parsedAt: number
}

/**
 * Events written at once, at most: a batch's uploads are written in groups of about this many
 * events, each as soon as the CPU pool has parsed it, which bounds one insert. Smaller groups let
 * the engine insert one while the pool parses the next, but cost more than they gain: groups of
 * 16,000 events took 3-4 us more engine CPU per event (each insert costs ~12 ms whatever its size,
 * and small parts are merged again) for no more events/s on 2 shared cores. Groups of 150,000
 * held a whole batch of gzip bodies at once (~118,000 events: the parsed events, their rows and
 * the engine's insert block, ~100 MB of engine memory alone), which put the sustained run's RSS
 * over 1 GB; with wider merges of `events` (migration 019) groups of 50,000 cost little more.
 */
export const EVENTS_PER_WRITE = 50_000

const NO_BYTES = Buffer.alloc(0)

/** Events attributed between two turns of the event loop, at most (plus one upload's). */
const ATTRIBUTE_SLICE_EVENTS = 4096

/**
 * Upload bytes (as received) given to the CPU pool ahead of the group being written: enough to
 * keep the pool's threads busy while the engine inserts (4 gzip bodies of 256 KB, ~14 plain
 * ones), without parsing the whole batch at once (its parsed events would all be held until the
 * batch ends).
 */
export const PARSE_AHEAD_BYTES = 1024 * 1024

/**
 * Upload bytes, as parsed (a gzip body counted at its inflated size), of a partition's next batch
 * given to the CPU pool while a batch is written: the memory PARSE_AHEAD_BYTES of gzip bodies
 * takes once inflated (~8 MB: the bench's bodies inflate 8.3 times), so look-ahead holds no more
 * than parsing ahead within a batch does. That is 4 gzip bodies of 256 KB, or all of a batch of
 * plain bodies (at most 4 MB): its parse no longer comes between one batch's write and the next.
 */
export const NEXT_BATCH_PARSE_BYTES = 8 * 1024 * 1024

/**
 * Stage 1 of server-side ingestion: split each upload into lines, validate them (on the CPU pool),
 * check the apps, attribute each event to its customer's last device, and forward the events: to
 * the events topic in blocks routed by app + uuid, or straight to the store (`forward`). A group's
 * rejected lines and its uploads' receipts are recorded as soon as its forward is durable; the
 * batch is committed only after all of it (a replay redoes it all and every write is idempotent).
 */
export function serverUploadSplitter(deps: SplitterDeps) {
  const direct = 'events' in deps.forward ? deps.forward.events : undefined
  const eventsPerWrite = deps.eventsPerWrite ?? EVENTS_PER_WRITE
  const partitions = 'topic' in deps.forward ? eventPartitions(deps.bus, deps.forward.topic) : undefined
  // Groups' rejects and receipts, each recorded as soon as its events are written, beside the next
  // group's insert; those of groups done while an earlier group's are inserted share one insert.
  const recorder = outcomeRecorder(deps.store)
  const recordGroup = (
    splitter: readonly RejectRow[],
    duplicates: readonly RejectRow[],
    receipts: ReceiptRow[],
  ): Promise<void> =>
    recorder.record(duplicates.length === 0 ? splitter : [...splitter, ...duplicates], receipts)
  // Uploads of a partition's next batch given to the pool while this one is written
  // (RecordBatch.ahead), by offset: a record of the log never changes, so its parse is good
  // whenever it is delivered. Without them the pool would sit idle during every write, and each
  // batch would wait for its whole parse before its look-ups and insert could start.
  const early = new Map<string, Map<string, { bytes: number; parsed: Promise<ParsedUpload> }>>()
  // Event store only: a partition's next batch's first uploads (of those parsed early), attributed
  // and handed to the event store while this batch's last group is inserted. Until then the engine
  // sat idle at every batch's start and end: while the first group was attributed, and while the
  // batch's rejects, receipts and commit were written. The next batch takes the write as its first
  // group's when it starts with those very records (docs/events.md, "Batches back to back").
  const writtenEarly = new Map<string, Promise<EarlyWrite | undefined>>()
  // Early writes not yet settled, so that a stop lets them end before the store closes.
  const inFlight = new Set<Promise<unknown>>()
  /**
   * The write started early for a batch starting at `records`, if it starts with its uploads: its
   * outcome and how many uploads it wrote, not the uploads themselves (their parsed events would
   * otherwise be held until the batch ends, not let go once written).
   */
  const takeEarlyWrite = async (
    partitionKey: string,
    records: readonly BusRecord[],
  ): Promise<{ outcome: Promise<GroupOutcome>; uploads: number } | undefined> => {
    const started = writtenEarly.get(partitionKey)
    writtenEarly.delete(partitionKey)
    const early = await started?.catch(() => undefined)
    if (!early || !startsWith(records, early.group)) return undefined
    return { outcome: early.outcome, uploads: early.group.length }
  }
  const handle = async (batch: RecordBatch): Promise<void> => {
    // Uploads go to the pool a little ahead of the group being written (PARSE_AHEAD_BYTES); each
    // group is handled as soon as it is parsed, and its parsed uploads are let go after it.
    const records = batch.records
    const partitionKey = `${batch.topic}\u0000${batch.partition}`
    // Parses started by the previous batch; any not of this batch are dropped (a retried batch).
    const started = early.get(partitionKey)
    early.delete(partitionKey)
    const parsing: (Promise<ParsedUpload> | undefined)[] = []
    let aheadBytes = 0
    let next = 0
    // One group is written (the engine's threads) while the next is parsed and attributed (the
    // pool and this thread): done one after the other, each stage waited for the others, and the
    // splitter was the whole pipeline's limit with a fifth of the machine idle. Groups are written
    // in order: the event store decides and inserts its writes one at a time, in the order they are
    // asked for, and looks the next one's keys up while it inserts (eventStore); here at most two
    // writes are outstanding, the one inserted and the one looked up.
    let writing: Promise<GroupOutcome> | undefined
    // The first group, written by the previous batch's call, if this batch starts with its records.
    // A retried batch does not: it writes those uploads afresh, and the event store finds what the
    // early write stored as the same uploads' own events (a replay, not a duplicate). A failed
    // early attribution is simply done again here; a failed early write fails this batch.
    const carried = await takeEarlyWrite(partitionKey, records)
    if (carried) {
      writing = carried.outcome
      next = carried.uploads
      for (let i = 0; i < next; i++) parsing.push(undefined)
    }
    const parseAhead = () => {
      while (parsing.length < records.length && (aheadBytes < PARSE_AHEAD_BYTES || parsing.length <= next)) {
        const record = records[parsing.length]!
        parsing.push(started?.get(record.offset)?.parsed ?? parseQuietly(deps, record))
        aheadBytes += record.value.length
      }
    }
    // Once all of this batch is with the pool, the records that follow it on the log go too, within
    // NEXT_BATCH_PARSE_BYTES as parsed.
    const parseNextBatch = () => {
      if (!batch.ahead || parsing.length < records.length) return
      const queued =
        early.get(partitionKey) ?? new Map<string, { bytes: number; parsed: Promise<ParsedUpload> }>()
      early.set(partitionKey, queued)
      let bytes = 0
      let last: string | undefined
      for (const [offset, e] of queued) {
        bytes += e.bytes
        last = offset
      }
      if (bytes >= NEXT_BATCH_PARSE_BYTES) return
      // Only the records after those with the pool already (each read costs a copy of its body);
      // as received, a gzip body is smaller than it is parsed, so this is at least what fits.
      const from = last === undefined ? undefined : String(Number(last) + 1)
      for (const record of batch.ahead(NEXT_BATCH_PARSE_BYTES - bytes, from)) {
        if (queued.has(record.offset)) continue
        const parsedBytes = parsedSize(record, deps.maxInflatedBytes)
        if (bytes > 0 && bytes + parsedBytes > NEXT_BATCH_PARSE_BYTES) break
        queued.set(record.offset, { bytes: parsedBytes, parsed: parseQuietly(deps, record) })
        bytes += parsedBytes
      }
    }
    const byReason = new Map<string, number>()
    const deviceTails = new Map<DeviceDims, Buffer>()
    // Groups' records (rejects and receipts) under way: the batch is done, and committed, once
    // they are, but its next groups are not held up by them.
    const recording: Promise<void>[] = []
    const collect = (outcome: GroupOutcome) => {
      // Counted once the batch is done (a failed batch is counted by its retry); the writer's
      // duplicates are counted where they are found.
      for (const r of outcome.splitter) byReason.set(r.reason, (byReason.get(r.reason) ?? 0) + 1)
      recording.push(outcome.recorded)
    }
    try {
      while (next < records.length) {
        const group: ParsedUpload[] = []
        let events = 0
        while (next < records.length && (events < eventsPerWrite || group.length === 0)) {
          parseAhead()
          const upload = await parsing[next]!
          parsing[next] = undefined
          aheadBytes -= records[next]!.value.length
          next++
          group.push(upload)
          events += upload.events.uuid.length
        }
        // The pool parses the next uploads while this group is attributed and written.
        parseAhead()
        parseNextBatch()
        const attributed = await attributeGroup(group)
        const previous = writing
        if (direct) {
          // The event store looks this group's keys up while it inserts the previous one.
          writing = forwardGroup(attributed)
          writing.catch(() => undefined)
          if (previous) collect(await previous)
        } else {
          // Blocks produced one group after the other: their order on the events topic is the
          // order the writers decide copies in.
          if (previous) collect(await previous)
          writing = forwardGroup(attributed)
        }
      }
      if (direct) {
        // A batch whose uploads were all written early runs no group, so it looks ahead here.
        parseNextBatch()
        writeNextEarly()
      }
      if (writing) collect(await writing)
      await Promise.all(recording)
    } catch (err) {
      // The batch fails as a whole (and is retried): a write still in flight is let finish first,
      // so a retry never writes beside it.
      await writing?.catch(() => undefined)
      await Promise.allSettled(recording)
      throw err
    }
    // More of the next batch has arrived during the writes.
    parseNextBatch()
    for (const [reason, n] of byReason) deps.onRejected?.(reason, n)

    /**
     * Attributes the next batch's first uploads (those already with the pool, in offset order
     * from the one after this batch, up to a group's worth) while this batch's last group is
     * written, and hands them to the event store, which writes them after that group; the next
     * call takes the write as its first group's (writtenEarly). The write records its group's
     * rejects and receipts once its rows are stored, as every group does; the commit stays the
     * next batch's, after all its writes.
     */
    function writeNextEarly(): void {
      const queued = early.get(partitionKey)
      const last = records.at(-1)
      if (!queued || queued.size === 0 || !last) return
      const written = (async (): Promise<EarlyWrite | undefined> => {
        const group: ParsedUpload[] = []
        let events = 0
        let expected = Number(last.offset) + 1
        for (const [offset, e] of queued) {
          if (Number(offset) !== expected || events >= eventsPerWrite) break
          const upload = await e.parsed
          group.push(upload)
          events += upload.events.uuid.length
          expected++
        }
        if (group.length === 0) return undefined
        const outcome = forwardGroup(await attributeGroup(group))
        // Its failure is the next call's (or nobody's, if that call does not take it).
        outcome.catch(() => undefined)
        // Its record too, which outlasts the write: a stop lets it end before the store closes.
        track(outcome.then((o) => o.recorded))
        return { group, outcome }
      })()
      // A failed attribution is handled by the call that takes it (it attributes those uploads itself).
      written.catch(() => undefined)
      track(written)
      writtenEarly.set(partitionKey, written)
    }

    /** Attributes a group of parsed uploads: the events to forward and what it rejected. */
    async function attributeGroup(group: ParsedUpload[]): Promise<AttributedGroup> {
      const appIds = new Set<string>()
      for (const upload of group) for (const app of upload.events.apps) appIds.add(app)
      const appOrg = await appOwners(deps.apps, appIds)
      const devices = await attributionDevices(deps, group, appOrg)
      const forward: BlockEvent[] = []
      const items: WriterItem[] = []
      const splitter: RejectRow[] = []
      const counts: { upload: ParsedUpload; forwarded: number; rejected: number }[] = []
      const processedAt = Date.now()
      let sinceYield = 0
      for (const upload of group) {
        // The writes wait on this thread between inserts (deciding and copying the next insert's
        // rows), and attributing 50,000 events is ~50 ms of it: in slices, the engine's next
        // insert is not held up behind a whole group's attribution.
        if (sinceYield >= ATTRIBUTE_SLICE_EVENTS) {
          sinceYield = 0
          await new Promise((resolve) => setImmediate(resolve))
        }
        sinceYield += upload.events.uuid.length
        const orgId = Number(upload.headers.org)
        const receivedAt = Number(upload.headers.recv)
        let forwarded = 0
        let rejected = upload.rejected
        const uploadRejects = upload.rejects
        const ref: UploadRef = { tx: upload.headers.tx, recv: receivedAt, org: orgId, source: 'server' }
        const context = { orgId, appOrg, devices }
        const rowOf = serverRows(upload.events, { receivedAt, transactionId: upload.headers.tx }, deviceTails)
        const events = upload.events
        for (let i = 0; i < events.uuid.length; i++) {
          const result = attributeEvent(events, i, context)
          if (isAttributionReject(result)) {
            rejected++
            if (uploadRejects.length < MAX_REJECTED_LINES_PER_UPLOAD)
              uploadRejects.push(
                rejectRow(
                  upload.headers,
                  result.line,
                  result.uuid,
                  result.reason,
                  result.detail,
                  result.app_id,
                ),
              )
            continue
          }
          const app = appOf(events, i)
          const uuid = events.uuid[i]!
          const line = events.line[i]!
          if (direct) {
            // The item holds its row's parts itself: one object per event, not two (a group's
            // items live until its insert ends, so each object is promoted and later collected).
            const item: WriterItem & RowParts = {
              app,
              uuid,
              upload: ref,
              line,
              value: NO_BYTES,
              keyHash: events.keyHash,
              keyIndex: i,
              head: NO_BYTES,
              source: NO_BYTES,
              start: 0,
              end: 0,
              tail: NO_BYTES,
            }
            item.value = rowOf(i, app, result, item)
            items.push(item)
          } else forward.push({ app, uuid, line, upload: ref, row: rowOf(i, app, result) })
          forwarded++
        }
        // No spread: an argument list has a size limit, an upload's rejects do not.
        for (const r of uploadRejects) splitter.push(r)
        counts.push({ upload, forwarded, rejected })
      }
      return { group, forward, items, splitter, counts, processedAt }
    }

    /**
     * Forwards an attributed group's events and records the group's rejected lines and receipts
     * as soon as its events are written, not once its batch is: a receipt no longer waits for the
     * batch's later groups (or, for a group written early, for the rest of the next batch). Still
     * before the commit: a replay records the same rows again (ReplacingMergeTree), and a group
     * recorded before a later one fails keeps its receipt through the batch's retry. Settles once
     * the events are written, while the record is under way (`recorded`): the next group's insert
     * does not wait for this one's receipts. Gives what the splitter rejected, for the batch's
     * counts.
     */
    async function forwardGroup(attributed: AttributedGroup): Promise<GroupOutcome> {
      const { group, forward, items, splitter, counts, processedAt } = attributed
      let recorded: Promise<void> = Promise.resolve()
      const record = (records: Promise<void>) => {
        // Its failure is the batch's, which awaits it before its commit.
        records.catch(() => undefined)
        recorded = records
        return Promise.resolve()
      }
      if (direct) {
        // As soon as the insert ends, while the event store inserts the next write.
        await direct.write(
          items,
          {
            topic: batch.topic,
            partition: batch.partition,
            first: group[0]!.record.offset,
            last: group[group.length - 1]!.record.offset,
          },
          (duplicates) =>
            record(recordGroup(splitter, duplicates, receiptRows(counts, duplicates, processedAt))),
        )
      } else {
        if (forward.length > 0 && partitions && 'topic' in deps.forward)
          await deps.bus.produce(deps.forward.topic, blockMessages(forward, await partitions()))
        await record(recordGroup(splitter, [], receiptRows(counts, undefined, processedAt)))
      }
      return { splitter, recorded }
    }

    /**
     * Forwarded events are counted by the receipt's reader (the events stored under the
     * transaction, and the writer's duplicates). Events this splitter stored itself are all stored
     * or found to be duplicates once its write returns, so their receipt says so: `direct` events
     * accepted and the duplicates among the rejected, nothing forwarded, and the reader needs no
     * look-up of `events` (docs/events.md, "Receipts"). A replay counts the same: events stored by
     * the upload's first attempt are not its duplicates.
     */
    function receiptRows(
      counts: readonly { upload: ParsedUpload; forwarded: number; rejected: number }[],
      duplicates: readonly RejectRow[] | undefined,
      processedAt: number,
    ): ReceiptRow[] {
      const writtenAt = Date.now()
      const duplicatesOf = new Map<string, number>()
      for (const d of duplicates ?? [])
        duplicatesOf.set(d.transaction_id, (duplicatesOf.get(d.transaction_id) ?? 0) + 1)
      return counts.map(({ upload, forwarded, rejected }) => {
        const lines = upload.lines
        const stages = { consumed: upload.consumedAt, parsed: upload.parsedAt, written: writtenAt }
        if (!duplicates)
          return receiptRow(upload.headers, { lines, forwarded, direct: 0, rejected }, processedAt, stages)
        const dups = duplicatesOf.get(upload.headers.tx) ?? 0
        return receiptRow(
          upload.headers,
          { lines, forwarded: 0, direct: forwarded - dups, rejected: rejected + dups },
          processedAt,
          stages,
        )
      })
    }
  }
  const track = (work: Promise<unknown>) => {
    inFlight.add(work)
    void work.then(
      () => inFlight.delete(work),
      () => inFlight.delete(work),
    )
  }
  /** Lets the writes started ahead of a batch end (before the store they write to is closed). */
  const drain = async (): Promise<void> => {
    while (inFlight.size > 0) await Promise.allSettled([...inFlight])
  }
  return Object.assign(handle, { drain })
}

interface EarlyWrite {
  /** The uploads written, the first of the next batch. */
  group: ParsedUpload[]
  outcome: Promise<GroupOutcome>
}

interface AttributedGroup {
  group: ParsedUpload[]
  /** Blocks for the events topic, or items for the event store (`forward`). */
  forward: BlockEvent[]
  items: WriterItem[]
  splitter: RejectRow[]
  counts: { upload: ParsedUpload; forwarded: number; rejected: number }[]
  processedAt: number
}

/** Whether `records` starts with the very records of `group`. */
function startsWith(records: readonly BusRecord[], group: readonly ParsedUpload[]): boolean {
  if (group.length > records.length) return false
  for (let i = 0; i < group.length; i++) if (group[i]!.record.offset !== records[i]!.offset) return false
  return true
}

interface GroupOutcome {
  /** The lines the splitter rejected, for the batch's counts. */
  splitter: RejectRow[]
  /** The group's rejects and receipts recorded (begun once its events were written). */
  recorded: Promise<void>
}

/**
 * The bytes of an upload's body once inflated: a gzip member ends with its inflated size modulo
 * 2^32 (RFC 1952, ISIZE); for a body of several members that is the last one's, so it is an
 * estimate, bounded by the inflate limit the CPU pool enforces.
 */
export function parsedSize(record: BusRecord, maxInflatedBytes: number): number {
  const body = record.value
  if ((record.headers as unknown as UploadHeaders).enc !== 'gzip' || body.length < 18) return body.length
  return Math.min(Math.max(body.readUInt32LE(body.length - 4), body.length), maxInflatedBytes)
}

/** parse, whose failure is handled where it is awaited and, until then, not counted as unhandled. */
function parseQuietly(deps: SplitterDeps, record: BusRecord): Promise<ParsedUpload> {
  const parsed = parse(deps, record)
  parsed.catch(() => undefined)
  return parsed
}

async function parse(deps: SplitterDeps, record: BusRecord): Promise<ParsedUpload> {
  const headers = record.headers as unknown as UploadHeaders
  const consumedAt = Date.now()
  const result = await deps.pool.run({
    kind: 'server-upload',
    body: record.value,
    encoding: headers.enc,
    receivedAt: Number(headers.recv),
    pastWindowMs: deps.pastWindowMs,
    futureWindowMs: deps.futureWindowMs,
    maxInflatedBytes: deps.maxInflatedBytes,
    maxRejects: MAX_REJECTED_LINES_PER_UPLOAD,
  })
  const parsedAt = Date.now()
  if (result.kind === 'server-upload') {
    return {
      record,
      headers,
      events: result.events,
      rejects: result.rejects.map((r) => rejectRow(headers, r.line, r.uuid, r.reason, r.detail)),
      rejected: result.rejected,
      lines: result.lines,
      consumedAt,
      parsedAt,
    }
  }
  // The edge checked the body already; this only happens if the limits changed in between.
  const detail = result.kind === 'unreadable' ? result.detail : 'unexpected task result'
  const reason = result.kind === 'unreadable' ? result.reason : 'unreadable'
  return {
    record,
    headers,
    events: noPackedEvents(),
    rejects: [rejectRow(headers, 0, null, reason, detail)],
    rejected: 1,
    lines: 0,
    consumedAt,
    parsedAt,
  }
}

async function appOwners(apps: AppDirectory, appIds: ReadonlySet<string>): Promise<Map<string, number>> {
  const owners = new Map<string, number>()
  for (const appId of appIds) {
    const app = await apps.getApp(appId)
    if (app) owners.set(appId, app.org_id)
  }
  return owners
}

async function attributionDevices(
  deps: SplitterDeps,
  uploads: ParsedUpload[],
  appOrg: Map<string, number>,
): Promise<Map<string, Map<string, DeviceDims>>> {
  // The customers of each app, then one pair per customer: a batch names each of its ~2,000
  // customers dozens of times, and a key string and an object per event cost more than a Set.
  const customersOf = new Map<string, Set<string>>()
  for (const upload of uploads) {
    const { apps, appIndex, customers, customerIndex } = upload.events
    const org = Number(upload.headers.org)
    // Per app of the upload, its customers' indexes: small integers, no string hashed per event.
    const named = apps.map((app) => (appOrg.get(app) === org ? new Set<number>() : undefined))
    for (let i = 0; i < appIndex.length; i++) named[appIndex[i]!]?.add(customerIndex[i]!)
    named.forEach((indexes, a) => {
      if (!indexes) return
      let ofApp = customersOf.get(apps[a]!)
      if (!ofApp) customersOf.set(apps[a]!, (ofApp = new Set()))
      for (const c of indexes) ofApp.add(customers[c]!)
    })
  }
  // By app, then customer: attribution then builds no key string per event.
  const byApp = new Map<string, Map<string, DeviceDims>>()
  const found = (app: string, customer: string, device: DeviceDims) => {
    let customers = byApp.get(app)
    if (!customers) byApp.set(app, (customers = new Map<string, DeviceDims>()))
    customers.set(customer, device)
  }
  const cache = deps.devices
  const pairs = new Map<string, { app: string; customer: string }>()
  for (const [app, customers] of customersOf)
    for (const customer of customers) {
      const cached = cache?.get(app, customer)
      if (cached) found(app, customer, cached)
      else pairs.set(customerKey(app, customer), { app, customer })
    }
  const lookUp = async (asked: Map<string, { app: string; customer: string }>) => {
    const since = cache?.generation
    const devices = await lookupDevices(deps.store, asked)
    const answered: [{ app: string; customer: string }, DeviceDims][] = []
    for (const [key, device] of devices) {
      const pair = asked.get(key)!
      found(pair.app, pair.customer, device)
      answered.push([pair, device])
    }
    if (cache && since !== undefined) cache.remember(answered, since)
    return devices
  }
  const devices = await lookUp(pairs)
  const missing = new Map([...pairs].filter(([key]) => !devices.has(key)))
  if (missing.size > 0) {
    await waitForSdkBacklog(deps.bus, deps.sdk.group, deps.sdk.topic, deps.sdk.waitMs)
    await lookUp(missing)
  }
  return byApp
}
