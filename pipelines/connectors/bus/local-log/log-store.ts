/**
 * The lmdb side of the local log: every read and write of records, offsets and commits.
 *
 * Layout (one environment, two named databases):
 * - `records`: key `[topic, partition, offset]`, value = a record as record-codec.ts lays it out.
 * - `meta` (msgpack): `['topic', topic]` → partition count, `['next', topic, partition]` → next
 *   offset, `['commit', topic, partition, group]` → the group's committed (next-to-read) offset.
 * - `tails` (versioned): key `[topic, partition]`, its version = the partition's next offset (the
 *   same number as `['next', …]`), the condition every append is written under (see append).
 *
 * Durability: the environment runs with `overlappingSync: false`, so lmdb fsyncs data and meta
 * pages inside every commit and a write's promise resolves only once the commit is on disk.
 * Readers therefore never see a record that a power loss could take back, which matters because
 * offsets feed downstream dedupe tokens.
 *
 * Memory: reads iterate synchronously and never hold an iterator or read transaction across an
 * await: a held snapshot stops lmdb from reusing freed pages, and the file then grows by rate x
 * hold time.
 */
import { open, type Database, type RootDatabase } from 'lmdb'
import type { BusRecord, ProduceMessage, TopicSpec } from '../bus.ts'
import { decodeRecord, encodeRecord, RecordEncoder, recordTimestamp } from './record-codec.ts'

type RecordKey = [topic: string, partition: number, offset: number]
type MetaKey = (string | number)[]
type TailKey = [topic: string, partition: number]

// Address space only (the file grows with the data; lmdb grows the map past it on demand). Without
// it lmdb-js starts small and doubles the map, keeping every old mapping, and the pages consumers
// touched in them, until close: resident file pages reached about twice the file size.
const DEFAULT_MAP_SIZE = 8 * 2 ** 30
const MAX_STRING = '\uffff'

/**
 * The lmdb environment with the log's durability settings. The bench's edge floor
 * (bench/baselines/floor-server.ts) opens its log with this too, so both append alike.
 */
export function openDurableEnv(path: string, mapSizeBytes = DEFAULT_MAP_SIZE): RootDatabase {
  // overlappingSync must be off for commit promises to mean "on disk" (see the module comment).
  return open({ path, maxDbs: 4, overlappingSync: false, mapSize: mapSizeBytes })
}

export class LogStore {
  private readonly records: Database<Buffer, RecordKey>
  private readonly meta: Database<number, MetaKey>
  private readonly tails: Database<boolean, TailKey>
  private readonly encoder = new RecordEncoder()
  /** Topics seen committed: topics are never deleted, so an append to one need not look it up. */
  private readonly knownTopics = new Set<string>()
  /**
   * Next offset per topic and partition as this process expects it: what its last append left,
   * or what it read. Only a guess: appends are written on condition that it holds.
   */
  private readonly expectedNext = new Map<string, (number | undefined)[]>()

  private constructor(private readonly env: RootDatabase) {
    this.records = env.openDB<Buffer, RecordKey>({ name: 'records', encoding: 'binary' })
    this.meta = env.openDB<number, MetaKey>({ name: 'meta', encoding: 'msgpack' })
    this.tails = env.openDB<boolean, TailKey>({ name: 'tails', encoding: 'msgpack', useVersions: true })
  }

  static open(path: string, mapSizeBytes = DEFAULT_MAP_SIZE): LogStore {
    return new LogStore(openDurableEnv(path, mapSizeBytes))
  }

  loadTopics(): Map<string, number> {
    const topics = new Map<string, number>()
    for (const { key, value } of this.meta.getRange({ start: ['topic'], end: ['topic', MAX_STRING] })) {
      const topic = key[1]
      if (typeof topic === 'string') {
        topics.set(topic, value)
        this.knownTopics.add(topic)
      }
    }
    return topics
  }

  partitionCount(topic: string): number | undefined {
    return this.meta.get(['topic', topic])
  }

  createTopics(specs: TopicSpec[]): Promise<Map<string, number>> {
    return this.meta.childTransaction(() => {
      const created = new Map<string, number>()
      for (const { topic, partitions } of specs) {
        const existing = this.meta.get(['topic', topic])
        if (existing === undefined) this.meta.putSync(['topic', topic], partitions)
        created.set(topic, existing ?? partitions)
      }
      return created
    })
  }

  /**
   * Appends each partition's messages, as records produced at `timestamp`, at its next offsets.
   * Resolves, once durable, to whether this call created the topic.
   *
   * Offsets stay distinct and gap-free with several producers (other processes included), and a
   * failed commit takes its offsets back. Usually no JavaScript runs inside lmdb's write
   * transaction: a partition's records are written by lmdb's write thread under the condition
   * that the partition's tail (`tails`, versioned) still stands where this process expects it
   * (where its own last append, queued before, leaves it). When that expectation is missing or
   * turns out stale (another producer appended meanwhile, or a commit failed), the append runs as
   * a transaction callback instead, which reads the tail inside the write transaction, behind
   * every write queued before it, and sets the expectation from there.
   */
  async append(
    topic: string,
    partitions: number,
    byPartition: Map<number, ProduceMessage[]>,
    timestamp: number,
  ): Promise<boolean> {
    for (const partition of byPartition.keys())
      if (this.expected(topic, partition) === undefined)
        return this.appendInTransaction(topic, partitions, byPartition, timestamp)
    const blocks: Promise<void>[] = []
    for (const [partition, messages] of byPartition) {
      const values = messages.map((message) => encodeRecord(message, timestamp))
      blocks.push(this.appendBlock(topic, partitions, partition, messages, values, timestamp))
    }
    await Promise.all(blocks)
    // Only an append in a transaction creates a topic, and one did before any expectation was set.
    return false
  }

  /**
   * append() of one message to one partition: every upload is one record, and this path makes no
   * per-partition map, arrays of blocks or async frame of its own for it.
   */
  appendOne(
    topic: string,
    partitions: number,
    partition: number,
    message: ProduceMessage,
    timestamp: number,
  ): Promise<boolean> {
    if (this.expected(topic, partition) === undefined)
      return this.appendInTransaction(topic, partitions, new Map([[partition, [message]]]), timestamp)
    const block = [encodeRecord(message, timestamp)]
    return this.appendBlock(topic, partitions, partition, [message], block, timestamp).then(notCreated)
  }

  private async appendBlock(
    topic: string,
    partitions: number,
    partition: number,
    messages: ProduceMessage[],
    values: Buffer[],
    timestamp: number,
  ): Promise<void> {
    const base = this.expected(topic, partition)!
    const next = base + values.length
    // Taken now, so appends started before this one commits queue up behind it.
    this.expect(topic, partition, next)
    let written: boolean
    try {
      written = await this.tails.ifVersion([topic, partition], base, () => {
        for (let i = 0; i < values.length; i++)
          void this.records.put([topic, partition, base + i], values[i]!)
        void this.meta.put(['next', topic, partition], next)
        void this.tails.put([topic, partition], true, next)
      })
    } catch (err) {
      // The commit failed, so its offsets were not taken: the next append reads the tail again.
      this.expect(topic, partition, undefined)
      throw err
    }
    if (written) return
    // Another producer moved the tail (or an earlier commit failed): nothing was written.
    this.expect(topic, partition, undefined)
    await this.appendInTransaction(topic, partitions, new Map([[partition, messages]]), timestamp)
  }

  private expected(topic: string, partition: number): number | undefined {
    return this.expectedNext.get(topic)?.[partition]
  }

  private expect(topic: string, partition: number, next: number | undefined): void {
    let byPartition = this.expectedNext.get(topic)
    if (!byPartition) this.expectedNext.set(topic, (byPartition = []))
    byPartition[partition] = next
  }

  /**
   * An append inside a write transaction: reads each partition's tail there (creating the topic
   * if needed) and records it as this process's expectation for the appends queued after it.
   */
  private appendInTransaction(
    topic: string,
    partitions: number,
    byPartition: Map<number, ProduceMessage[]>,
    timestamp: number,
  ): Promise<boolean> {
    const appended = this.records.childTransaction(() => {
      const created = !this.knownTopics.has(topic) && this.meta.get(['topic', topic]) === undefined
      if (created) this.meta.putSync(['topic', topic], partitions)
      for (const [partition, messages] of byPartition) {
        let next = this.nextOffset(topic, partition)
        for (const message of messages)
          this.records.putSync([topic, partition, next++], this.encoder.encode(message, timestamp))
        this.meta.putSync(['next', topic, partition], next)
        this.tails.putSync([topic, partition], true, next)
        this.expect(topic, partition, next)
      }
      return created
    })
    return appended.then(
      (created) => {
        this.knownTopics.add(topic)
        return created
      },
      (err: unknown) => {
        for (const partition of byPartition.keys()) this.expect(topic, partition, undefined)
        throw err
      },
    )
  }

  nextOffset(topic: string, partition: number): number {
    return this.meta.get(['next', topic, partition]) ?? 0
  }

  firstOffset(topic: string, partition: number): number {
    for (const key of this.records.getKeys({ ...partitionRange(topic, partition), limit: 1 })) return key[2]
    return this.nextOffset(topic, partition)
  }

  countRecords(topic: string, partition: number): number {
    return this.records.getCount(partitionRange(topic, partition))
  }

  /** Records from `from` on, in offset order, within both limits (but at least one record). */
  readBatch(
    topic: string,
    partition: number,
    from: number,
    maxRecords: number,
    maxBytes: number,
  ): BusRecord[] {
    const batch: BusRecord[] = []
    let bytes = 0
    const range = { start: [topic, partition, from], end: [topic, partition + 1], limit: maxRecords }
    for (const { key, value } of this.records.getRange(range)) {
      const record = decodeRecord(topic, partition, key[2], value)
      if (batch.length > 0 && bytes + record.value.length > maxBytes) break
      batch.push(record)
      bytes += record.value.length
    }
    return batch
  }

  /** When the record at `offset` was produced (ms since epoch), or undefined when it is not stored. */
  producedAt(topic: string, partition: number, offset: number): number | undefined {
    const value = this.records.getBinaryFast([topic, partition, offset])
    return value === undefined ? undefined : recordTimestamp(value)
  }

  committed(group: string, topic: string, partition: number): number | undefined {
    return this.meta.get(['commit', topic, partition, group])
  }

  /**
   * Records the group as a reader of the partition (so retention waits for it) and resolves to
   * where it resumes: its committed offset, or the oldest stored record for a new group.
   */
  join(group: string, topic: string, partition: number): Promise<number> {
    return this.meta.childTransaction(() => {
      const committed = this.committed(group, topic, partition)
      if (committed !== undefined) return committed
      const first = this.firstOffset(topic, partition)
      this.meta.putSync(['commit', topic, partition, group], first)
      return first
    })
  }

  async commit(group: string, topic: string, partition: number, next: number): Promise<void> {
    await this.meta.put(['commit', topic, partition, group], next)
  }

  /**
   * Deletes up to `limit` of the oldest records that every group has committed past and that
   * were produced at or before `cutoff`. Runs inside one write transaction, so a group joining
   * concurrently is either seen here or joins at the new oldest record.
   */
  trim(topic: string, partition: number, cutoff: number, limit: number): Promise<number> {
    // Most sweeps find nothing to delete: decide that from a read, without a write transaction.
    const floor = this.lowestCommit(topic, partition)
    if (floor === undefined) return Promise.resolve(0)
    const [oldest] = this.records.getKeys({
      start: [topic, partition],
      end: [topic, partition, floor],
      limit: 1,
    })
    if (oldest === undefined || this.recordTimestamp(oldest) > cutoff) return Promise.resolve(0)
    return this.records.childTransaction(() => {
      const floor = this.lowestCommit(topic, partition)
      if (floor === undefined) return 0
      const range = { start: [topic, partition], end: [topic, partition, floor], limit }
      const doomed: RecordKey[] = []
      for (const key of this.records.getKeys(range)) {
        // Timestamps grow with offsets (up to clock steps), so the first young record ends the run.
        if (this.recordTimestamp(key) > cutoff) break
        doomed.push(key)
      }
      for (const key of doomed) this.records.removeSync(key)
      return doomed.length
    })
  }

  close(): Promise<void> {
    return this.env.close()
  }

  private lowestCommit(topic: string, partition: number): number | undefined {
    let lowest: number | undefined
    const range = { start: ['commit', topic, partition], end: ['commit', topic, partition + 1] }
    for (const { value } of this.meta.getRange(range)) lowest = Math.min(lowest ?? value, value)
    return lowest
  }

  private recordTimestamp(key: RecordKey): number {
    // getBinaryFast avoids copying the payload; only the header's timestamp is read.
    const value = this.records.getBinaryFast(key)
    return value === undefined ? 0 : recordTimestamp(value)
  }
}

const notCreated = () => false

function partitionRange(topic: string, partition: number): { start: MetaKey; end: MetaKey } {
  return { start: [topic, partition], end: [topic, partition + 1] }
}
