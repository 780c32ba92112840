import type { EachBatchPayload, Kafka, Consumer as KafkaConsumer } from 'kafkajs'
import type { ConsumeOptions, RecordBatch } from '../bus.ts'
import type { ConsumerProgress } from './lag.ts'
import { errorMessage, type LogBridge } from './log-bridge.ts'
import { maxOffset, splitMessages, toRecord } from './messages.ts'

export interface ConsumerSettings {
  sessionTimeoutMs: number
  rebalanceTimeoutMs: number
  heartbeatIntervalMs: number
  maxWaitTimeMs: number
  partitionsConsumedConcurrently: number
  retryBackoffMs: number
  maxRetryBackoffMs: number
}

export interface ConsumerContext {
  kafka: Kafka
  settings: ConsumerSettings
  logs: LogBridge
  /** Told what each batch fetched and committed, for the lag fallback. */
  progress: ConsumerProgress
}

/** One Bus consumer: a kafkajs consumer in a group, committing after each handled batch. */
export class KafkaConsumerHandle {
  private consumer: KafkaConsumer | undefined
  private stopping: Promise<void> | undefined
  private readonly abort = new AbortController()
  /** Consecutive handler failures per partition, for the redelivery backoff. */
  private readonly failures = new Map<string, number>()
  private readonly maxRecords: number
  private readonly maxBytes: number

  constructor(
    private readonly context: ConsumerContext,
    private readonly options: ConsumeOptions,
  ) {
    this.maxRecords = Math.max(1, options.maxBatchRecords ?? Number.POSITIVE_INFINITY)
    this.maxBytes = Math.max(1, options.maxBatchBytes ?? Number.POSITIVE_INFINITY)
  }

  async start(): Promise<void> {
    const { group, topics } = this.options
    const consumer = this.createConsumer(group, () => this.stopping === undefined)
    this.consumer = consumer
    consumer.on(consumer.events.CRASH, (event) => {
      this.context.logs.log('error', 'consumer crashed', {
        group,
        error: errorMessage(event.payload.error),
        restart: event.payload.restart,
      })
    })
    await consumer.connect()
    await consumer.subscribe({ topics, fromBeginning: true })
    // Resolves once the group is joined (kafkajs awaits the first join and sync).
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.context.settings.partitionsConsumedConcurrently,
      eachBatch: (payload) => this.eachBatch(consumer, payload),
    })
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.abort.abort()
      // kafkajs' disconnect waits for every eachBatch in flight, which commits before returning.
      await this.consumer?.disconnect()
    })()
    return this.stopping
  }

  private createConsumer(groupId: string, restart: () => boolean): KafkaConsumer {
    const { settings } = this.context
    return this.context.kafka.consumer({
      groupId,
      sessionTimeout: settings.sessionTimeoutMs,
      rebalanceTimeout: settings.rebalanceTimeoutMs,
      heartbeatInterval: settings.heartbeatIntervalMs,
      maxWaitTimeInMs: settings.maxWaitTimeMs,
      ...fetchLimits(this.options.maxBatchBytes),
      allowAutoTopicCreation: true,
      // A crashed kafkajs consumer (e.g. too many failed commits) would otherwise stay dead silently.
      retry: { retries: 5, restartOnFailure: async () => restart() },
    })
  }

  private async eachBatch(consumer: KafkaConsumer, payload: EachBatchPayload): Promise<void> {
    const { batch } = payload
    const { topic, partition } = batch
    const { group, handler } = this.options
    const { settings, progress } = this.context
    progress.noteFetched(group, topic, partition, batch.highWatermark)
    const chunks = splitMessages(batch.messages, this.maxRecords, this.maxBytes)

    for (let i = 0; i < chunks.length; i++) {
      if (!payload.isRunning() || payload.isStale()) return
      const chunk = chunks[i]!
      const records = chunk.map((m) => toRecord(topic, partition, m))
      const recordBatch: RecordBatch = { topic, partition, records }
      const first = chunk[0]!.offset

      // A slow handler must not cost us the group membership; heartbeat() is rate-limited by kafkajs.
      const beat = setInterval(
        () => void payload.heartbeat().catch(() => {}),
        Math.max(100, Math.floor(settings.heartbeatIntervalMs / 2)),
      )
      let failed = false
      try {
        await handler(recordBatch)
      } catch (err) {
        failed = true
        this.reportError(err, recordBatch)
        // Nothing is committed. kafkajs would refetch from its last resolved offset anyway; the seek
        // makes that explicit and also marks anything already fetched past it as stale, so no later
        // record of this partition can be handled and committed ahead of these.
        consumer.seek({ topic, partition, offset: first })
        const key = `${topic}:${partition}`
        const n = (this.failures.get(key) ?? 0) + 1
        this.failures.set(key, n)
        const { retryBackoffMs, maxRetryBackoffMs } = settings
        await sleep(Math.min(maxRetryBackoffMs, retryBackoffMs * 2 ** Math.min(n - 1, 20)), this.abort.signal)
      } finally {
        clearInterval(beat)
      }
      if (failed) return
      this.failures.delete(`${topic}:${partition}`)

      const last = chunk[chunk.length - 1]!.offset
      payload.resolveOffset(last)
      // The last chunk commits past batch.lastOffset(), which also covers trailing control records.
      const next = (
        BigInt(i === chunks.length - 1 ? maxOffset(batch.lastOffset(), last) : last) + 1n
      ).toString()
      // commitOffsetsIfNecessary(offsets) commits straight away, also while stopping, whereas
      // consumer.commitOffsets() silently does nothing once stop() has begun.
      await payload.commitOffsetsIfNecessary({
        topics: [{ topic, partitions: [{ partition, offset: next }] }],
      })
      progress.noteCommitted(group, topic, partition, next)
      await payload.heartbeat()
    }
  }

  private reportError(err: unknown, batch: RecordBatch): void {
    const { onError, group } = this.options
    const fields = {
      group,
      topic: batch.topic,
      partition: batch.partition,
      firstOffset: batch.records[0]?.offset,
      records: batch.records.length,
      error: errorMessage(err),
    }
    if (onError === undefined) {
      this.context.logs.log('error', 'handler failed; batch will be redelivered', fields)
      return
    }
    try {
      onError(err, batch)
    } catch (e) {
      this.context.logs.log('error', 'onError threw', { ...fields, onErrorError: errorMessage(e) })
    }
  }
}

/** kafkajs' own fetch limits: 1 MB per partition, 10 MB per fetch. */
const KAFKAJS_PARTITION_FETCH_BYTES = 1024 * 1024
const KAFKAJS_FETCH_BYTES = 10 * 1024 * 1024

/**
 * A fetch that can fill one handler call: kafkajs fetches at most 1 MB of a partition at a time,
 * so a stage whose batches may hold 8 MB (the upload splitter: 64 plain or 32 gzip bodies) would
 * be handed 4 gzip bodies a call from a backlog, and pay each call's store round trips and commit
 * for that many. Up to two batches' worth per fetch, so the next is at hand while one is handled;
 * never less than kafkajs' own limits.
 */
export function fetchLimits(maxBatchBytes: number | undefined): {
  maxBytesPerPartition: number
  maxBytes: number
} {
  if (maxBatchBytes === undefined || !Number.isFinite(maxBatchBytes))
    return { maxBytesPerPartition: KAFKAJS_PARTITION_FETCH_BYTES, maxBytes: KAFKAJS_FETCH_BYTES }
  const perPartition = Math.max(KAFKAJS_PARTITION_FETCH_BYTES, Math.ceil(maxBatchBytes))
  return { maxBytesPerPartition: perPartition, maxBytes: Math.max(KAFKAJS_FETCH_BYTES, 2 * perPartition) }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer)
      signal.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal.addEventListener('abort', done)
  })
}
