/**
 * The Bus port: partitioned topics, keyed produce, consumer groups that commit only after the
 * handler has finished with a batch. Two adapters implement it: the embedded local log (lmdb)
 * and Kafka (kafkajs). Pipelines depend on this file only.
 *
 * Delivery is at-least-once: a batch whose handler throws, or whose process dies before the
 * commit, is delivered again. Every sink downstream is idempotent by a natural key.
 */

export interface ProduceMessage {
  /** Records with the same key land in the same partition, in produce order. */
  key?: string
  /**
   * An explicit partition (0 .. partitionCount-1) instead of the key's: for a record that carries
   * a block of items which all belong to that partition's owner.
   */
  partition?: number
  value: Buffer
  headers?: Record<string, string>
}

export interface BusRecord {
  topic: string
  partition: number
  /** Offsets are decimal strings (Kafka offsets are 64-bit). */
  offset: string
  key: string | null
  value: Buffer
  headers: Record<string, string>
  /** Produce time, ms since epoch. */
  timestamp: number
}

export interface RecordBatch {
  topic: string
  partition: number
  records: BusRecord[]
  /**
   * The records after this batch that are on the log now, from offset `from` (by default the first
   * after the batch; at most the consumer's batch limits and `maxBytes` of values), for pure work
   * on them to start while this batch is handled; they are delivered again, in order, by later
   * calls, whatever was done with them here. Where the transport offers it (the local log); a
   * handler must not depend on it.
   */
  ahead?: (maxBytes: number, from?: string) => BusRecord[]
}

export interface TopicSpec {
  topic: string
  partitions: number
}

export interface ConsumeOptions {
  group: string
  topics: string[]
  /** Called with records of one partition in offset order. Resolve = commit; throw = redeliver. */
  handler: (batch: RecordBatch) => Promise<void>
  /** Upper bound on records handed to one handler call. */
  maxBatchRecords?: number
  /** Upper bound on value bytes handed to one handler call (at least one record is always handed). */
  maxBatchBytes?: number
  /** Called when the handler throws; the batch is then retried after a backoff. */
  onError?: (err: unknown, batch: RecordBatch) => void
}

export interface Consumer {
  /** Stop fetching, let the batch in flight finish and commit, then leave the group. */
  stop(): Promise<void>
}

export interface Bus {
  readonly kind: 'local' | 'kafka'
  /** Create topics where the transport allows it (idempotent). */
  ensureTopics(topics: TopicSpec[]): Promise<void>
  /**
   * Resolves only once every message is durable (fsync'd locally, or acks=-1 on Kafka). A
   * message's value is read only until the returned promise settles, resolved or rejected: the
   * edge then reuses that memory for the next upload (UploadBuffers).
   */
  produce(topic: string, messages: ProduceMessage[]): Promise<void>
  consume(options: ConsumeOptions): Promise<Consumer>
  /** Partitions of a topic (creating it with the default count where the transport does that). */
  partitionCount(topic: string): Promise<number>
  /** Records produced but not yet committed by the group, summed over partitions. */
  lag(group: string, topic: string): Promise<number>
  /**
   * How long the oldest record the group has not committed has waited, ms (0 when none): the
   * backlog in time, whatever the records hold. Optional: a transport that cannot tell cheaply
   * (Kafka: it would take a fetch per partition) leaves it out.
   */
  backlogAgeMs?(group: string, topic: string): Promise<number>
  close(): Promise<void>
}

/** Kafka's default partitioner is murmur2 over the key; we use the same so keys land alike in both modes. */
export function partitionForKey(key: string | undefined, partitions: number, roundRobin: number): number {
  // One partition (the embedded default): nothing to hash.
  if (partitions === 1) return 0
  if (key === undefined) return roundRobin % partitions
  return (murmur2(Buffer.from(key)) & 0x7fffffff) % partitions
}

/** Kafka's murmur2 (as in the Java client and kafkajs' DefaultPartitioner). */
export function murmur2(data: Buffer): number {
  const length = data.length
  const seed = 0x9747b28c
  const m = 0x5bd1e995
  const r = 24
  let h = seed ^ length
  const length4 = Math.floor(length / 4)
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4
    let k =
      (data[i4 + 0]! & 0xff) +
      ((data[i4 + 1]! & 0xff) << 8) +
      ((data[i4 + 2]! & 0xff) << 16) +
      ((data[i4 + 3]! & 0xff) << 24)
    k = Math.imul(k, m)
    k ^= k >>> r
    k = Math.imul(k, m)
    h = Math.imul(h, m)
    h ^= k
  }
  const tail = length & ~3
  const rest = length % 4
  if (rest === 3) h ^= (data[tail + 2]! & 0xff) << 16
  if (rest >= 2) h ^= (data[tail + 1]! & 0xff) << 8
  if (rest >= 1) {
    h ^= data[tail]! & 0xff
    h = Math.imul(h, m)
  }
  h ^= h >>> 13
  h = Math.imul(h, m)
  h ^= h >>> 15
  return h
}
