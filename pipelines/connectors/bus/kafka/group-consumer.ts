import type { EachBatchPayload, Kafka, Consumer as KafkaConsumer } from 'kafkajs'
import type { ConsumeOptions, RecordBatch } from '../bus.ts'
import { roundRobinToEveryMember } from './assigner.ts'
import type { ConsumerProgress } from './lag.ts'
import { errorMessage, type LogBridge } from './log-bridge.ts'
import { maxOffset, splitMessages, toRecord } from './messages.ts'

export interface ConsumerSettings {
  sessionTimeoutMs: number
  rebalanceTimeoutMs: number
  heartbeatIntervalMs: number
  /** How long a leader waits before sending its assignment (assigner.ts); 0 on Kafka. */
  leaderSyncDelayMs: number
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

/**
 * One Bus consumer: a kafkajs consumer in a group, committing after each handled batch. How it
 * behaves in a rebalance (docs/scaling.md): it rejoins at once and keeps trying for as long as a
 * rebalance can take (groupRetry), stops handling a fetched batch when the group moves, and is
 * started again whatever made it crash.
 */
export class KafkaConsumerHandle {
  private consumer: KafkaConsumer | undefined
  private stopping: Promise<void> | undefined
  /** Restarts of a crashed consumer, one after another (a restart that fails queues the next). */
  private restarts: Promise<void> | undefined
  /** Restarts since the consumer last joined the group, for their backoff. */
  private restartsInARow = 0
  private readonly abort = new AbortController()
  /**
   * Aborted once a heartbeat or commit says the group is rebalancing, renewed at every join: the
   * member then hands back what it fetched instead of keeping the group waiting while it handles
   * it (a real broker waits up to the rebalance timeout for every member to rejoin; librdkafka's
   * mock goes on without a late member, which then sets off one more rebalance).
   */
  private generation = new AbortController()
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

  /** Resolves once the group is joined (kafkajs awaits the first join and sync), or the join crashed. */
  async start(): Promise<void> {
    const { group, topics } = this.options
    const consumer = this.createConsumer(group, () => this.stopping === undefined)
    this.consumer = consumer
    let joined = false
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true
      this.restartsInARow = 0
      this.generation = new AbortController()
    })
    consumer.on(consumer.events.CRASH, (event) => {
      const { error, restart } = event.payload
      this.context.logs.log('error', 'consumer crashed', { group, error: errorMessage(error), restart })
      // kafkajs restarts a consumer itself only after retriable errors. After any other (a
      // broker answering INVALID_REQUEST, as librdkafka's mock does to a SyncGroup that comes
      // after the leader's) it stays down, and the worker would keep running without it. The
      // restart is a new member. A consumer that had joined left the group on its way down, and
      // the rebalance that set off takes in the new member if it comes at once; one that crashed
      // in its first join is still a member until its session expires, and a new member before
      // that would cost a second rebalance when the old one expires.
      if (!restart && consumer === this.consumer)
        this.queueRestart(joined ? 0 : this.context.settings.sessionTimeoutMs)
    })
    await consumer.connect()
    await consumer.subscribe({ topics, fromBeginning: true })
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
      await this.restarts
      // kafkajs' disconnect waits for every eachBatch in flight, which commits before returning.
      await this.consumer?.disconnect()
    })()
    return this.stopping
  }

  /** A new kafkajs consumer (a new member of the group) after a backoff, until one starts. */
  private queueRestart(notBeforeMs: number): void {
    if (this.stopping !== undefined) return
    this.restarts = (this.restarts ?? Promise.resolve()).then(async () => {
      const n = ++this.restartsInARow
      await sleep(Math.max(notBeforeMs, backoffMs(this.context.settings, n)), this.abort.signal)
      if (this.stopping !== undefined) return
      const { group } = this.options
      this.context.logs.log('warn', 'restarting a crashed consumer', { group, restart: n })
      try {
        await this.start()
      } catch (err) {
        this.context.logs.log('error', 'consumer restart failed', { group, error: errorMessage(err) })
        await this.consumer?.disconnect().catch(() => {})
        this.queueRestart(0)
      }
    })
  }

  private createConsumer(groupId: string, restart: () => boolean): KafkaConsumer {
    const { settings } = this.context
    return this.context.kafka.consumer({
      groupId,
      partitionAssigners: [roundRobinToEveryMember(settings.leaderSyncDelayMs)],
      sessionTimeout: settings.sessionTimeoutMs,
      rebalanceTimeout: settings.rebalanceTimeoutMs,
      heartbeatInterval: settings.heartbeatIntervalMs,
      maxWaitTimeInMs: settings.maxWaitTimeMs,
      ...fetchLimits(this.options.maxBatchBytes),
      allowAutoTopicCreation: true,
      retry: { ...groupRetry(settings), restartOnFailure: async () => restart() },
    })
  }

  private async eachBatch(consumer: KafkaConsumer, payload: EachBatchPayload): Promise<void> {
    const { batch } = payload
    const { topic, partition } = batch
    const { group, handler } = this.options
    const { settings, progress } = this.context
    progress.noteFetched(group, topic, partition, batch.highWatermark)
    const chunks = splitMessages(batch.messages, this.maxRecords, this.maxBytes)
    const generation = this.generation
    const endOfGeneration = (err: unknown) => {
      if (isGroupChange(err)) generation.abort()
    }
    const stopOrRebalance = AbortSignal.any([this.abort.signal, generation.signal])

    for (let i = 0; i < chunks.length; i++) {
      // Records not handled are fetched again, by this member or the partition's next owner.
      if (!payload.isRunning() || payload.isStale() || generation.signal.aborted) return
      const chunk = chunks[i]!
      const records = chunk.map((m) => toRecord(topic, partition, m))
      const recordBatch: RecordBatch = { topic, partition, records }
      const first = chunk[0]!.offset

      // A slow handler must not cost us the group membership; heartbeat() is rate-limited by kafkajs.
      const beat = setInterval(
        () => void payload.heartbeat().catch(endOfGeneration),
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
        await sleep(backoffMs(settings, n), stopOrRebalance)
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
      // consumer.commitOffsets() silently does nothing once stop() has begun. In a rebalance the
      // commit still counts while this member's generation is current (a real broker takes it);
      // when it fails, kafkajs rejoins and the batch is redelivered, which the sinks absorb.
      try {
        await payload.commitOffsetsIfNecessary({
          topics: [{ topic, partitions: [{ partition, offset: next }] }],
        })
        progress.noteCommitted(group, topic, partition, next)
        await payload.heartbeat()
      } catch (err) {
        endOfGeneration(err)
        throw err
      }
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

/**
 * kafkajs' retry settings for a group member. They drive its rejoin loop: a JoinGroup or
 * SyncGroup cut short by a newer rebalance is tried again after a pause, and after `retries`
 * failures in a row kafkajs crashes the consumer and restarts it as a new member, which sets
 * off one more rebalance of the group. kafkajs' defaults (5 retries, pauses doubling from 300 ms)
 * give up within one rebalance on librdkafka's mock, which holds every rebalance for the session
 * timeout less a second, and on a real broker whose rebalance waits for a slow member; and a
 * member that pauses 5 s before rejoining misses the round. So: short pauses (a rejoin waits on
 * the coordinator, which holds the JoinGroup until the round completes, so a pause only spaces
 * out retries, it does not poll), at most a heartbeat interval and 1 s, as many as span the
 * longest a group can take to settle: the rebalance timeout (how long a broker waits for members
 * to rejoin) plus the session timeout (how long a dead member holds the group before that).
 */
export function groupRetry(
  settings: Pick<ConsumerSettings, 'sessionTimeoutMs' | 'rebalanceTimeoutMs' | 'heartbeatIntervalMs'>,
): { initialRetryTime: number; maxRetryTime: number; retries: number } {
  const maxRetryTime = Math.max(100, Math.min(1_000, settings.heartbeatIntervalMs))
  const initialRetryTime = Math.min(250, maxRetryTime)
  const budget = settings.rebalanceTimeoutMs + settings.sessionTimeoutMs
  let retries = 0
  for (let spent = 0, pause = initialRetryTime; spent < budget; retries++) {
    spent += pause
    pause = Math.min(2 * pause, maxRetryTime)
  }
  return { initialRetryTime, maxRetryTime, retries }
}

/**
 * kafkajs' errors that mean this member's generation is over: the group is rebalancing (or the
 * coordinator moved, or forgot the member), so it must rejoin.
 */
function isGroupChange(err: unknown): boolean {
  const type = (err as { type?: unknown } | undefined)?.type
  return (
    type === 'REBALANCE_IN_PROGRESS' ||
    type === 'ILLEGAL_GENERATION' ||
    type === 'NOT_COORDINATOR_FOR_GROUP' ||
    type === 'UNKNOWN_MEMBER_ID'
  )
}

/** The n-th consecutive retry's delay: doubling from retryBackoffMs up to maxRetryBackoffMs. */
function backoffMs(
  settings: Pick<ConsumerSettings, 'retryBackoffMs' | 'maxRetryBackoffMs'>,
  n: number,
): number {
  return Math.min(settings.maxRetryBackoffMs, settings.retryBackoffMs * 2 ** Math.min(n - 1, 20))
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
