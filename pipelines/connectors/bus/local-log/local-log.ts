/**
 * The embedded adapter of the Bus port: a durable, partitioned log in one lmdb environment.
 *
 * Layout (one environment, two named databases):
 * - `records`: key `[topic, partition, offset]`, value = a small binary header (timestamp, key,
 *   headers) followed by the payload bytes, so payloads are stored and read without re-encoding.
 * - `meta` (msgpack): `['topic', topic]` → partition count, `['next', topic, partition]` → next
 *   offset, `['commit', topic, partition, group]` → the group's committed (next-to-read) offset.
 *
 * Durability: the environment runs with `overlappingSync: false`, so lmdb fsyncs data and meta
 * pages inside every commit and a write's promise resolves only once the commit is on disk. All
 * writes of one event turn share one transaction (lmdb's event-turn batching), so concurrent
 * produce() calls share one fsync (group commit). Readers therefore never see a record that a
 * power loss could take back, which matters because offsets feed downstream dedupe tokens.
 *
 * Memory: the file and its resident pages settle near the most unconsumed data held at once, so
 * retention sweeps often (500 ms) and the map is reserved up front (see DEFAULT_MAP_SIZE). Reads
 * iterate synchronously and never hold an iterator or read transaction across an await: a held
 * snapshot stops lmdb from reusing freed pages, and the file then grows by rate x hold time.
 *
 * Limits, by design of the embedded mode:
 * - One process per data directory. lmdb itself is multi-process safe and consumers poll for
 *   records written elsewhere, but consumer groups coordinate only within one process.
 * - One consumer per group per process; it owns every partition of its topics and runs one
 *   batch at a time per partition, partitions concurrently.
 * - Retention deletes records below the lowest committed offset of every group that ever
 *   consumed the topic. A topic no group has consumed keeps all its records, and a group that
 *   stops consuming for good pins the log until its commit entries are removed.
 */
import { open, type Database, type RootDatabase } from 'lmdb'
import {
  partitionForKey,
  type Bus,
  type BusRecord,
  type ConsumeOptions,
  type Consumer,
  type ProduceMessage,
  type RecordBatch,
  type TopicSpec,
} from './bus.ts'

export interface LocalLogOptions {
  /** Directory of the lmdb environment, created when missing. One process per directory. */
  path: string
  /** Partition count of topics created implicitly by produce(). */
  partitions: number
  retention?: {
    /** Consumed records younger than this stay. Default 0. */
    minAgeMs?: number
    /** Period of the background sweep. Default 500; 0 turns the timer off (see runRetention()). */
    intervalMs?: number
    /** Records deleted per write transaction, so a sweep never holds the write lock for long. */
    deletesPerTransaction?: number
  }
  /** Address space reserved for the memory map (default 8 GiB); not a cap, and not disk space. */
  mapSizeBytes?: number
  /** Fallback poll for records committed by another process; local produce wakes consumers at once. */
  pollIntervalMs?: number
  /** Backoff before a failed batch is retried, doubling from initialMs up to maxMs. */
  retryBackoff?: { initialMs?: number; maxMs?: number }
  /** Errors of background work (retention sweeps). Default: process.emitWarning. */
  onBackgroundError?: (err: unknown) => void
}

export interface PartitionStats {
  partition: number
  /** Offset of the oldest stored record (equals nextOffset when the partition is empty). */
  firstOffset: number
  nextOffset: number
  /** Records currently stored. */
  records: number
}

export interface TopicStats {
  topic: string
  partitions: PartitionStats[]
  records: number
}

export interface LogStats {
  topics: TopicStats[]
  records: number
}

type RecordKey = [topic: string, partition: number, offset: number]
type MetaKey = (string | number)[]

const DEFAULT_MAX_BATCH_RECORDS = 500
const DEFAULT_MAX_BATCH_BYTES = 8 * 1024 * 1024
const DEFAULT_POLL_MS = 100
// The file (and the pages of it the process has touched) settles near the most data it ever held
// at once: rate x (sweep period + consumer lag). At 100 MB/s a 5 s period held ~600 MB, 0.5 s ~70 MB.
const DEFAULT_RETENTION_INTERVAL_MS = 500
// Address space only (the file grows with the data; lmdb grows the map past it on demand). Without
// it lmdb-js starts small and doubles the map, keeping every old mapping, and the pages consumers
// touched in them, until close: resident file pages reached about twice the file size.
const DEFAULT_MAP_SIZE = 8 * 2 ** 30
const DEFAULT_DELETES_PER_TXN = 1000
const DEFAULT_BACKOFF = { initialMs: 100, maxMs: 5000 }
// Kafka's legal topic names, so a topic that works here works on the distributed bus too.
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/
const TOPICS_CHANGED = 'topics'

export class LocalLog implements Bus {
  readonly kind = 'local' as const
  private readonly store: LogStore
  private readonly wakeups = new Wakeups()
  private readonly topics = new Map<string, number>()
  private readonly roundRobin = new Map<string, number>()
  private readonly consumers = new Map<string, LocalConsumer>()
  private readonly pendingWrites = new Set<Promise<unknown>>()
  private readonly retentionTimer: NodeJS.Timeout | undefined
  private sweeping: Promise<number> | undefined
  private closing: Promise<void> | undefined

  private constructor(
    env: RootDatabase,
    private readonly options: LocalLogOptions,
  ) {
    this.store = new LogStore(env)
    for (const [topic, partitions] of this.store.loadTopics()) this.topics.set(topic, partitions)
    const intervalMs = options.retention?.intervalMs ?? DEFAULT_RETENTION_INTERVAL_MS
    if (intervalMs > 0) {
      this.retentionTimer = setInterval(() => this.sweepInBackground(), intervalMs)
      this.retentionTimer.unref()
    }
  }

  static open(options: LocalLogOptions): LocalLog {
    assertPositiveInteger(options.partitions, 'partitions')
    // overlappingSync must be off for commit promises to mean "on disk" (see the module comment).
    const env = open({
      path: options.path,
      maxDbs: 4,
      overlappingSync: false,
      mapSize: options.mapSizeBytes ?? DEFAULT_MAP_SIZE,
    })
    return new LocalLog(env, options)
  }

  async ensureTopics(topics: TopicSpec[]): Promise<void> {
    this.assertOpen()
    for (const { topic, partitions } of topics) {
      assertTopicName(topic)
      assertPositiveInteger(partitions, `partitions of ${topic}`)
    }
    // Like Kafka's createTopics, an existing topic keeps its partition count.
    const created = await this.track(this.store.createTopics(topics))
    for (const [topic, partitions] of created) this.topics.set(topic, partitions)
    if (created.size > 0) this.wakeups.notify(TOPICS_CHANGED)
  }

  async produce(topic: string, messages: ProduceMessage[]): Promise<void> {
    this.assertOpen()
    assertTopicName(topic)
    if (messages.length === 0) return
    const partitions = this.partitionsOf(topic) ?? this.options.partitions
    const timestamp = Date.now()
    const byPartition = new Map<number, Buffer[]>()
    for (const message of messages) {
      const partition =
        message.partition ?? partitionForKey(message.key, partitions, this.nextRoundRobin(topic, message.key))
      if (!Number.isInteger(partition) || partition < 0 || partition >= partitions) {
        throw new RangeError(`partition ${partition} out of range for ${topic} (${partitions} partitions)`)
      }
      const values = byPartition.get(partition) ?? []
      values.push(encodeRecord(message, timestamp))
      byPartition.set(partition, values)
    }
    const created = await this.track(this.store.append(topic, partitions, byPartition))
    this.topics.set(topic, this.topics.get(topic) ?? partitions)
    for (const partition of byPartition.keys()) this.wakeups.notify(partitionSignal(topic, partition))
    if (created) this.wakeups.notify(TOPICS_CHANGED)
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    this.assertOpen()
    assertGroupName(options.group)
    for (const topic of options.topics) assertTopicName(topic)
    if (this.consumers.has(options.group)) {
      throw new Error(`consumer group ${options.group} already has a consumer in this process`)
    }
    const consumer = new LocalConsumer(
      {
        store: this.store,
        wakeups: this.wakeups,
        partitionsOf: (topic) => this.partitionsOf(topic),
        onStopped: () => this.consumers.delete(options.group),
      },
      {
        group: options.group,
        topics: [...new Set(options.topics)],
        handler: options.handler,
        onError: options.onError ?? (() => undefined),
        maxBatchRecords: Math.max(1, options.maxBatchRecords ?? DEFAULT_MAX_BATCH_RECORDS),
        maxBatchBytes: Math.max(1, options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES),
        pollIntervalMs: this.options.pollIntervalMs ?? DEFAULT_POLL_MS,
        backoffInitialMs: this.options.retryBackoff?.initialMs ?? DEFAULT_BACKOFF.initialMs,
        backoffMaxMs: this.options.retryBackoff?.maxMs ?? DEFAULT_BACKOFF.maxMs,
      },
    )
    this.consumers.set(options.group, consumer)
    try {
      await consumer.start()
    } catch (err) {
      await consumer.stop()
      throw err
    }
    return consumer
  }

  async lag(group: string, topic: string): Promise<number> {
    this.assertOpen()
    const partitions = this.partitionsOf(topic) ?? 0
    let lag = 0
    for (let partition = 0; partition < partitions; partition++) {
      const first = this.store.firstOffset(topic, partition)
      const position = Math.max(this.store.committed(group, topic, partition) ?? first, first)
      lag += this.store.nextOffset(topic, partition) - position
    }
    return lag
  }

  /** Deletes consumed records now (the background sweep calls this); resolves to the count deleted. */
  runRetention(): Promise<number> {
    this.assertOpen()
    this.sweeping ??= this.sweep().finally(() => (this.sweeping = undefined))
    return this.sweeping
  }

  /** What is stored, per topic and partition. Counting walks the keys, so keep it off hot paths. */
  stats(): LogStats {
    this.assertOpen()
    const topics = [...this.topics].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    const stats = topics.map(([topic, partitions]) => this.topicStats(topic, partitions))
    return { topics: stats, records: stats.reduce((sum, topic) => sum + topic.records, 0) }
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown()
    return this.closing
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.retentionTimer)
    await Promise.all([...this.consumers.values()].map((consumer) => consumer.stop()))
    await this.sweeping?.catch(() => undefined)
    await Promise.allSettled([...this.pendingWrites])
    await this.store.close()
  }

  private async sweep(): Promise<number> {
    const minAgeMs = this.options.retention?.minAgeMs ?? 0
    const perTxn = this.options.retention?.deletesPerTransaction ?? DEFAULT_DELETES_PER_TXN
    let deleted = 0
    for (const [topic, partitions] of this.topics) {
      for (let partition = 0; partition < partitions && this.closing === undefined; partition++) {
        for (;;) {
          const count = await this.track(this.store.trim(topic, partition, Date.now() - minAgeMs, perTxn))
          deleted += count
          if (count < perTxn || this.closing !== undefined) break
        }
      }
    }
    return deleted
  }

  private sweepInBackground(): void {
    if (this.closing !== undefined || this.sweeping !== undefined) return
    const report = this.options.onBackgroundError ?? defaultBackgroundError
    this.runRetention().catch(report)
  }

  private topicStats(topic: string, partitions: number): TopicStats {
    const stats: PartitionStats[] = []
    for (let partition = 0; partition < partitions; partition++) {
      stats.push({
        partition,
        firstOffset: this.store.firstOffset(topic, partition),
        nextOffset: this.store.nextOffset(topic, partition),
        records: this.store.countRecords(topic, partition),
      })
    }
    return { topic, partitions: stats, records: stats.reduce((sum, p) => sum + p.records, 0) }
  }

  async partitionCount(topic: string): Promise<number> {
    this.assertOpen()
    assertTopicName(topic)
    const known = this.partitionsOf(topic)
    if (known !== undefined) return known
    await this.ensureTopics([{ topic, partitions: this.options.partitions }])
    return this.partitionsOf(topic) ?? this.options.partitions
  }

  private partitionsOf(topic: string): number | undefined {
    const known = this.topics.get(topic)
    if (known !== undefined) return known
    // Another process may have created it since we loaded the topic list.
    const stored = this.store.partitionCount(topic)
    if (stored !== undefined) this.topics.set(topic, stored)
    return stored
  }

  private nextRoundRobin(topic: string, key: string | undefined): number {
    const counter = this.roundRobin.get(topic) ?? 0
    if (key === undefined) this.roundRobin.set(topic, counter + 1)
    return counter
  }

  private track<T>(write: Promise<T>): Promise<T> {
    this.pendingWrites.add(write)
    const forget = () => this.pendingWrites.delete(write)
    write.then(forget, forget)
    return write
  }

  private assertOpen(): void {
    if (this.closing !== undefined) throw new Error('local log is closed')
  }
}

/** The lmdb side: every read and write of records, offsets and commits. */
class LogStore {
  private readonly records: Database<Buffer, RecordKey>
  private readonly meta: Database<number, MetaKey>

  constructor(private readonly env: RootDatabase) {
    this.records = env.openDB<Buffer, RecordKey>({ name: 'records', encoding: 'binary' })
    this.meta = env.openDB<number, MetaKey>({ name: 'meta', encoding: 'msgpack' })
  }

  loadTopics(): Map<string, number> {
    const topics = new Map<string, number>()
    for (const { key, value } of this.meta.getRange({ start: ['topic'], end: ['topic', MAX_STRING] })) {
      const topic = key[1]
      if (typeof topic === 'string') topics.set(topic, value)
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
   * Appends each partition's values at its next offsets. Offsets are read and advanced inside
   * the write transaction, so concurrent producers (even in other processes) get distinct,
   * gap-free offsets, and a failed commit takes its offsets back with it.
   * Resolves to whether this call created the topic.
   */
  append(topic: string, partitions: number, byPartition: Map<number, Buffer[]>): Promise<boolean> {
    return this.records.childTransaction(() => {
      const created = this.meta.get(['topic', topic]) === undefined
      if (created) this.meta.putSync(['topic', topic], partitions)
      for (const [partition, values] of byPartition) {
        let next = this.nextOffset(topic, partition)
        for (const value of values) this.records.putSync([topic, partition, next++], value)
        this.meta.putSync(['next', topic, partition], next)
      }
      return created
    })
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
    return value === undefined ? 0 : value.readDoubleLE(1)
  }
}

interface ConsumerContext {
  store: LogStore
  wakeups: Wakeups
  partitionsOf: (topic: string) => number | undefined
  onStopped: () => void
}

interface ConsumerSettings {
  group: string
  topics: string[]
  handler: (batch: RecordBatch) => Promise<void>
  onError: (err: unknown, batch: RecordBatch) => void
  maxBatchRecords: number
  maxBatchBytes: number
  pollIntervalMs: number
  backoffInitialMs: number
  backoffMaxMs: number
}

/**
 * One group's consumer: a worker per partition (one batch in flight each, so a slow partition
 * does not hold up the others) and a supervisor that starts workers for partitions of topics
 * that appear after the consumer started.
 */
class LocalConsumer implements Consumer {
  private readonly stopping = new AbortController()
  private readonly workers = new Map<string, Promise<void>>()
  private supervisor: Promise<void> | undefined
  private stopped: Promise<void> | undefined

  constructor(
    private readonly context: ConsumerContext,
    private readonly settings: ConsumerSettings,
  ) {}

  /** Joins every partition that exists now, so lag and retention account for the group at once. */
  async start(): Promise<void> {
    const joins: Promise<void>[] = []
    for (const [topic, partition] of this.knownPartitions()) {
      joins.push(this.context.store.join(this.settings.group, topic, partition).then(() => undefined))
    }
    await Promise.all(joins)
    this.supervisor = this.supervise()
  }

  stop(): Promise<void> {
    this.stopped ??= this.shutdown()
    return this.stopped
  }

  private async shutdown(): Promise<void> {
    this.stopping.abort()
    await this.supervisor
    await Promise.all(this.workers.values())
    this.context.onStopped()
  }

  private async supervise(): Promise<void> {
    const signal = this.stopping.signal
    while (!signal.aborted) {
      for (const [topic, partition] of this.knownPartitions()) {
        const id = partitionSignal(topic, partition)
        if (!this.workers.has(id)) this.workers.set(id, this.runPartition(topic, partition))
      }
      await this.context.wakeups.wait(TOPICS_CHANGED, this.settings.pollIntervalMs, signal)
    }
  }

  private *knownPartitions(): Generator<[string, number]> {
    for (const topic of this.settings.topics) {
      const partitions = this.context.partitionsOf(topic) ?? 0
      for (let partition = 0; partition < partitions; partition++) yield [topic, partition]
    }
  }

  private async runPartition(topic: string, partition: number): Promise<void> {
    const signal = this.stopping.signal
    let position: number | undefined
    let backoff = this.settings.backoffInitialMs
    while (!signal.aborted) {
      try {
        position ??= await this.context.store.join(this.settings.group, topic, partition)
        const next = await this.step(topic, partition, position)
        if (next === undefined) return
        position = next
        backoff = this.settings.backoffInitialMs
      } catch (err) {
        // Store failures (not handler failures) land here; report them like a failed batch.
        this.report(err, { topic, partition, records: [] })
        await delay(backoff, signal)
        backoff = Math.min(backoff * 2, this.settings.backoffMaxMs)
      }
    }
  }

  /** Delivers and commits one batch; resolves to the new position, or undefined once stopping. */
  private async step(topic: string, partition: number, position: number): Promise<number | undefined> {
    const { store, wakeups } = this.context
    const { maxBatchRecords, maxBatchBytes, pollIntervalMs } = this.settings
    const records = store.readBatch(topic, partition, position, maxBatchRecords, maxBatchBytes)
    const last = records.at(-1)
    if (last === undefined) {
      // No await between the empty read and registering the waiter, so no wake-up is missed.
      await wakeups.wait(partitionSignal(topic, partition), pollIntervalMs, this.stopping.signal)
      return position
    }
    if (!(await this.deliver({ topic, partition, records }))) return undefined
    const next = Number(last.offset) + 1
    await store.commit(this.settings.group, topic, partition, next)
    return next
  }

  /** Calls the handler until it succeeds; false when stopped before it did (redelivered later). */
  private async deliver(batch: RecordBatch): Promise<boolean> {
    const signal = this.stopping.signal
    let backoff = this.settings.backoffInitialMs
    for (;;) {
      try {
        await this.settings.handler(batch)
        return true
      } catch (err) {
        this.report(err, batch)
      }
      if (signal.aborted) return false
      await delay(backoff, signal)
      if (signal.aborted) return false
      backoff = Math.min(backoff * 2, this.settings.backoffMaxMs)
    }
  }

  private report(err: unknown, batch: RecordBatch): void {
    try {
      this.settings.onError(err, batch)
    } catch {
      // A throwing error reporter must not kill the partition's loop.
    }
  }
}

/** In-process wake-ups: a consumer waiting on a partition resumes as soon as a produce commits. */
class Wakeups {
  private readonly waiting = new Map<string, Set<() => void>>()

  wait(id: string, timeoutMs: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve()
      const waiters = this.waiting.get(id) ?? new Set()
      this.waiting.set(id, waiters)
      const wake = () => {
        clearTimeout(timer)
        signal.removeEventListener('abort', wake)
        waiters.delete(wake)
        if (waiters.size === 0) this.waiting.delete(id)
        resolve()
      }
      const timer = setTimeout(wake, timeoutMs)
      signal.addEventListener('abort', wake, { once: true })
      waiters.add(wake)
    })
  }

  notify(id: string): void {
    const waiters = this.waiting.get(id)
    if (waiters !== undefined) for (const wake of [...waiters]) wake()
  }
}

// Record value layout: u8 format, f64 timestamp, u32 key length (NULL_KEY = no key), key,
// u32 headers length, headers as JSON, payload. Little endian.
const FORMAT = 1
const NULL_KEY = 0xffffffff
const MAX_STRING = '\uffff'

function encodeRecord(message: ProduceMessage, timestamp: number): Buffer {
  const key = message.key === undefined ? undefined : Buffer.from(message.key)
  const headers = hasHeaders(message.headers) ? Buffer.from(JSON.stringify(message.headers)) : undefined
  const headerSize = 1 + 8 + 4 + (key?.length ?? 0) + 4 + (headers?.length ?? 0)
  const out = Buffer.allocUnsafe(headerSize + message.value.length)
  let at = out.writeUInt8(FORMAT, 0)
  at = out.writeDoubleLE(timestamp, at)
  at = out.writeUInt32LE(key?.length ?? NULL_KEY, at)
  at += key?.copy(out, at) ?? 0
  at = out.writeUInt32LE(headers?.length ?? 0, at)
  at += headers?.copy(out, at) ?? 0
  out.set(message.value, at)
  return out
}

function decodeRecord(topic: string, partition: number, offset: number, data: Buffer): BusRecord {
  if (data[0] !== FORMAT)
    throw new Error(`unknown record format ${data[0]} at ${topic}/${partition}/${offset}`)
  const timestamp = data.readDoubleLE(1)
  let at = 9
  const keyLength = data.readUInt32LE(at)
  at += 4
  const key = keyLength === NULL_KEY ? null : data.toString('utf8', at, (at += keyLength))
  const headersLength = data.readUInt32LE(at)
  at += 4
  const headers = headersLength === 0 ? {} : parseHeaders(data.toString('utf8', at, (at += headersLength)))
  // getRange hands out a private copy per record, so a view into it is safe to keep.
  return { topic, partition, offset: String(offset), key, value: data.subarray(at), headers, timestamp }
}

function hasHeaders(headers: Record<string, string> | undefined): headers is Record<string, string> {
  return headers !== undefined && Object.keys(headers).length > 0
}

function parseHeaders(json: string): Record<string, string> {
  return JSON.parse(json) as Record<string, string>
}

function partitionRange(topic: string, partition: number): { start: MetaKey; end: MetaKey } {
  return { start: [topic, partition], end: [topic, partition + 1] }
}

function partitionSignal(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done, { once: true })
  })
}

function assertTopicName(topic: string): void {
  if (!TOPIC_NAME.test(topic)) throw new Error(`invalid topic name ${JSON.stringify(topic)}`)
}

function assertGroupName(group: string): void {
  // lmdb keys cannot hold NUL and are at most ~2 KB; group names sit inside keys.
  if (group.length === 0 || group.length > 255 || group.includes('\u0000')) {
    throw new Error(`invalid consumer group name ${JSON.stringify(group)}`)
  }
}

function assertPositiveInteger(value: number, what: string): void {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`${what} must be a positive integer, got ${value}`)
}

function defaultBackgroundError(err: unknown): void {
  process.emitWarning(`local log retention sweep failed: ${String(err)}`)
}
