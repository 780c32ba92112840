/**
 * The embedded adapter of the Bus port: a durable, partitioned log in one lmdb environment.
 * This class checks arguments, keeps the topic list and wires the parts: log-store.ts (the lmdb
 * layout, durability), appender.ts (produce, group commit), group-consumer.ts (the per-partition
 * consume loops), retention.ts (sweeps of consumed records) and stats.ts (lag, what is stored).
 *
 * Durability: produce() resolves only once its records are fsync'd, and readers never see a
 * record that a power loss could take back, which matters because offsets feed downstream
 * dedupe tokens.
 *
 * Limits, by design of the embedded mode:
 * - One process per data directory. lmdb itself is multi-process safe and consumers poll for
 *   records written elsewhere, but consumer groups coordinate only within one process.
 * - One consumer per group per process; it owns every partition of its topics and runs one
 *   batch at a time per partition, partitions concurrently.
 * - Retention deletes records below the lowest committed offset of every group that ever
 *   consumed the topic (see retention.ts).
 */
import type { Bus, ConsumeOptions, Consumer, ProduceMessage, TopicSpec } from '../bus.ts'
import { Appender } from './appender.ts'
import { LocalConsumer } from './group-consumer.ts'
import { LogStore } from './log-store.ts'
import { Retention, type RetentionOptions } from './retention.ts'
import { groupBacklogAgeMs, groupLag, logStats, type LogStats } from './stats.ts'
import { TOPICS_CHANGED, Wakeups } from './wakeups.ts'

export interface LocalLogOptions {
  /** Directory of the lmdb environment, created when missing. One process per directory. */
  path: string
  /** Partition count of topics created implicitly by produce(). */
  partitions: number
  retention?: RetentionOptions
  /** Address space reserved for the memory map (default 8 GiB); not a cap, and not disk space. */
  mapSizeBytes?: number
  /** Fallback poll for records committed by another process; local produce wakes consumers at once. */
  pollIntervalMs?: number
  /** Backoff before a failed batch is retried, doubling from initialMs up to maxMs. */
  retryBackoff?: { initialMs?: number; maxMs?: number }
  /** Errors of background work (retention sweeps). Default: process.emitWarning. */
  onBackgroundError?: (err: unknown) => void
}

const DEFAULT_MAX_BATCH_RECORDS = 500
const DEFAULT_MAX_BATCH_BYTES = 8 * 1024 * 1024
// Only records committed by another process need the poll (a local produce wakes its consumers at
// once), and the embedded mode runs one process per data directory; every idle partition of every
// group and every supervisor wakes at this rate, which at 100 ms cost the idle edge ~1 % of a core.
const DEFAULT_POLL_MS = 1000
const DEFAULT_BACKOFF = { initialMs: 100, maxMs: 5000 }
// Kafka's legal topic names, so a topic that works here works on the distributed bus too.
const TOPIC_NAME = /^[a-zA-Z0-9._-]{1,249}$/

export class LocalLog implements Bus {
  readonly kind = 'local' as const
  private readonly wakeups = new Wakeups()
  private readonly topics = new Map<string, number>()
  private readonly appender: Appender
  private readonly consumers = new Map<string, LocalConsumer>()
  /** Writes under way (close() waits for them), and how close() learns they are done. */
  private pendingWrites = 0
  private writesDrained: (() => void) | undefined
  private readonly writeSettled = () => {
    if (--this.pendingWrites === 0) this.writesDrained?.()
  }
  private readonly retention: Retention
  private closing: Promise<void> | undefined

  private constructor(
    private readonly store: LogStore,
    private readonly options: LocalLogOptions,
  ) {
    for (const [topic, partitions] of store.loadTopics()) this.topics.set(topic, partitions)
    this.appender = new Appender(store, this.wakeups)
    this.retention = new Retention(
      { store, topics: this.topics, track: (write) => this.track(write) },
      options.retention,
      options.onBackgroundError,
    )
  }

  static open(options: LocalLogOptions): LocalLog {
    assertPositiveInteger(options.partitions, 'partitions')
    return new LocalLog(LogStore.open(options.path, options.mapSizeBytes), options)
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
    // A topic this log knows had its name checked when it was made.
    const known = this.topics.get(topic)
    if (known === undefined) assertTopicName(topic)
    if (messages.length === 0) return
    const partitions = known ?? this.partitionsOf(topic) ?? this.options.partitions
    const created = await this.track(this.appender.append(topic, partitions, messages))
    if (known === undefined) this.topics.set(topic, this.topics.get(topic) ?? partitions)
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
    return groupLag(this.store, group, topic, this.partitionsOf(topic) ?? 0)
  }

  async backlogAgeMs(group: string, topic: string): Promise<number> {
    this.assertOpen()
    return groupBacklogAgeMs(this.store, group, topic, this.partitionsOf(topic) ?? 0, Date.now())
  }

  /** Deletes consumed records now (the background sweep calls this); resolves to the count deleted. */
  runRetention(): Promise<number> {
    this.assertOpen()
    return this.retention.run()
  }

  /** What is stored, per topic and partition. Counting walks the keys, so keep it off hot paths. */
  stats(): LogStats {
    this.assertOpen()
    return logStats(this.store, this.topics)
  }

  async partitionCount(topic: string): Promise<number> {
    this.assertOpen()
    assertTopicName(topic)
    const known = this.partitionsOf(topic)
    if (known !== undefined) return known
    await this.ensureTopics([{ topic, partitions: this.options.partitions }])
    return this.partitionsOf(topic) ?? this.options.partitions
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown()
    return this.closing
  }

  private async shutdown(): Promise<void> {
    const retentionStopped = this.retention.stop()
    await Promise.all([...this.consumers.values()].map((consumer) => consumer.stop()))
    await retentionStopped
    if (this.pendingWrites > 0) await new Promise<void>((resolve) => (this.writesDrained = resolve))
    await this.store.close()
  }

  private partitionsOf(topic: string): number | undefined {
    const known = this.topics.get(topic)
    if (known !== undefined) return known
    // Another process may have created it since we loaded the topic list.
    const stored = this.store.partitionCount(topic)
    if (stored !== undefined) this.topics.set(topic, stored)
    return stored
  }

  /** Counts `write` as under way until it settles (a counter: this runs once per upload). */
  private track<T>(write: Promise<T>): Promise<T> {
    this.pendingWrites++
    write.then(this.writeSettled, this.writeSettled)
    return write
  }

  private assertOpen(): void {
    if (this.closing !== undefined) throw new Error('local log is closed')
  }
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
