import type { BusRecord, Consumer, RecordBatch } from '../bus.ts'
import type { LogStore } from './log-store.ts'
import { partitionSignal, TOPICS_CHANGED, type Wakeups } from './wakeups.ts'

export interface ConsumerContext {
  store: LogStore
  wakeups: Wakeups
  partitionsOf: (topic: string) => number | undefined
  onStopped: () => void
}

export interface ConsumerSettings {
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
export class LocalConsumer implements Consumer {
  private readonly stopping = new AbortController()
  private readonly workers = new Map<string, Promise<void>>()
  private supervisor: Promise<void> | undefined
  private stopped: Promise<void> | undefined
  /** Records a handler read ahead, per partition, kept for the batch they belong to. */
  private readonly readAhead = new Map<string, BusRecord[]>()

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
    const { wakeups } = this.context
    const { maxBatchRecords, maxBatchBytes, pollIntervalMs } = this.settings
    const records = this.readBatch(topic, partition, position, maxBatchRecords, maxBatchBytes)
    const last = records.at(-1)
    if (last === undefined) {
      // No await between the empty read and registering the waiter, so no wake-up is missed.
      await wakeups.wait(partitionSignal(topic, partition), pollIntervalMs, this.stopping.signal)
      return position
    }
    const next = Number(last.offset) + 1
    // A look at what follows, for the handler's pure work (the splitter parses ahead with it),
    // within the next batch's record limit.
    const ahead = (maxBytes: number, from?: string) => {
      const start = Math.max(next, from === undefined ? next : Number(from))
      const left = maxBatchRecords - (start - next)
      if (left <= 0) return []
      const seen = this.context.store.readBatch(
        topic,
        partition,
        start,
        left,
        Math.min(maxBytes, maxBatchBytes),
      )
      this.remember(topic, partition, seen)
      return seen
    }
    if (!(await this.deliver({ topic, partition, records, ahead }))) return undefined
    await this.context.store.commit(this.settings.group, topic, partition, next)
    return next
  }

  /**
   * A batch from `from` on: the records read ahead for it where they follow on from `from`
   * (a record of the log never changes, so they need not be read and copied again), the rest
   * from the store.
   */
  private readBatch(topic: string, partition: number, from: number, maxRecords: number, maxBytes: number) {
    const id = partitionSignal(topic, partition)
    const seen = this.readAhead.get(id) ?? []
    this.readAhead.delete(id)
    const store = this.context.store
    const batch: BusRecord[] = []
    let bytes = 0
    let at = from
    // The kept records that follow on, then (lazily, from where they end) the store's.
    function* candidates(): Generator<BusRecord> {
      for (const record of seen) if (Number(record.offset) === at) yield record
      if (batch.length < maxRecords)
        yield* store.readBatch(topic, partition, at, maxRecords - batch.length, maxBytes)
    }
    for (const record of candidates()) {
      if (batch.length >= maxRecords || (batch.length > 0 && bytes + record.value.length > maxBytes)) break
      batch.push(record)
      bytes += record.value.length
      at++
    }
    return batch
  }

  /** Keeps the records read ahead for the partition's next batch, in offset order. */
  private remember(topic: string, partition: number, records: BusRecord[]): void {
    if (records.length === 0) return
    const id = partitionSignal(topic, partition)
    const kept = this.readAhead.get(id) ?? []
    const after = kept.length === 0 ? -1 : Number(kept.at(-1)!.offset)
    for (const record of records) if (Number(record.offset) > after) kept.push(record)
    this.readAhead.set(id, kept)
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
