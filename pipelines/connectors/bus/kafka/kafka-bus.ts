import {
  Kafka,
  Partitioners,
  logLevel as KafkaLogLevel,
  type Admin,
  type Consumer as KafkaConsumer,
  type EachBatchPayload,
  type IHeaders,
  type KafkaMessage,
  type LogEntry,
  type Producer,
} from 'kafkajs'
import type {
  Bus,
  BusRecord,
  ConsumeOptions,
  Consumer,
  ProduceMessage,
  RecordBatch,
  TopicSpec,
} from './bus.ts'

/**
 * The Bus port over Kafka (kafkajs).
 *
 * Deliberately plain: acks=-1, no idempotent or transactional producer (librdkafka's mock cluster,
 * our local Kafka stand-in, has no controller and rejects both), at-least-once consumers that commit
 * only after the handler resolved. Every sink downstream is idempotent, so duplicates are harmless.
 *
 * Against the mock cluster (librdkafka 2.0.2, from Debian's kcat), as exercised by
 * test/integration/kafka-bus.test.ts:
 * - CreateTopics fails at once (no controller): ensureTopics logs at info and continues; the mock
 *   auto-creates any topic a request names (produce, subscribe, even the admin's metadata and
 *   ListOffsets calls), always with 4 partitions.
 * - ListOffsets and OffsetFetch work, so lag() uses the admin client there as on real Kafka.
 * - DescribeGroups is not supported (not used).
 * - A group's first JoinGroup is held for 3 s (the mock's group.initial.rebalance.delay.ms), and a
 *   rebalance of a group that already has members waits sessionTimeout - 1 s; any session timeout
 *   is accepted.
 */

type LogLevelName = 'error' | 'warn' | 'info' | 'debug'
export type KafkaBusLogLevel = 'silent' | 'fatal' | LogLevelName | 'trace'
/** The subset of a pino logger the adapter uses. */
export type KafkaBusLogger = Record<LogLevelName, (fields: Record<string, unknown>, message: string) => void>

export interface KafkaBusOptions {
  brokers: string[]
  clientId: string
  /** Partitions for topics whose TopicSpec gives none (ensureTopics only; the mock always makes 4). */
  defaultPartitions: number
  /** Omitted: the broker's default.replication.factor. */
  replicationFactor?: number
  /** Where kafkajs and adapter logs go (a pino logger fits). Default: JSON lines on stderr. */
  logger?: KafkaBusLogger
  /** Threshold for kafkajs and adapter logs, whatever the logger's own level. Default 'warn'. */
  logLevel?: KafkaBusLogLevel
  /** Consumer group session timeout. Real brokers refuse < 6000 (group.min.session.timeout.ms). */
  sessionTimeoutMs?: number
  rebalanceTimeoutMs?: number
  heartbeatIntervalMs?: number
  /** Fetch long-poll; also bounds how long stop() waits for an idle fetch. */
  maxWaitTimeMs?: number
  partitionsConsumedConcurrently?: number
  /** First delay before redelivering a batch whose handler threw; doubles per consecutive failure. */
  retryBackoffMs?: number
  maxRetryBackoffMs?: number
  /** Upper bound on any admin round trip (ensureTopics, lag). */
  adminTimeoutMs?: number
  connectionTimeoutMs?: number
  requestTimeoutMs?: number
}

const LEVEL_NUMBERS: Record<KafkaBusLogLevel, KafkaLogLevel> = {
  silent: KafkaLogLevel.NOTHING,
  fatal: KafkaLogLevel.ERROR,
  error: KafkaLogLevel.ERROR,
  warn: KafkaLogLevel.WARN,
  info: KafkaLogLevel.INFO,
  debug: KafkaLogLevel.DEBUG,
  trace: KafkaLogLevel.DEBUG,
}

type LogSink = (level: LogLevelName, message: string, fields: Record<string, unknown>) => void

const stderrSink: LogSink = (level, message, fields) => {
  process.stderr.write(JSON.stringify({ level, time: Date.now(), msg: message, ...fields }) + '\n')
}

type KafkaBusSettings = Required<
  Omit<KafkaBusOptions, 'replicationFactor' | 'logger' | 'logLevel' | 'brokers' | 'clientId'>
>

interface PartitionProgress {
  /** Offset after the last record the broker had when we last fetched. */
  high: bigint
  /** Offset committed by this process (next to read). */
  committed: bigint
}

export class KafkaBus implements Bus {
  readonly kind = 'kafka' as const
  private readonly kafka: Kafka
  private readonly options: KafkaBusSettings
  private readonly sink: LogSink
  private readonly level: KafkaLogLevel
  private producer: Promise<Producer> | undefined
  private admin: Promise<Admin> | undefined
  private readonly consumers = new Set<KafkaConsumerHandle>()
  /** Fallback for lag() when the admin API does not answer: what our own consumers have seen. */
  private readonly progress = new Map<string, Map<number, PartitionProgress>>()
  private closed = false

  constructor(private readonly config: KafkaBusOptions) {
    if (config.brokers.length === 0) throw new Error('KafkaBus: no brokers given')
    const logger = config.logger
    this.sink =
      logger === undefined
        ? stderrSink
        : (level, message, fields) => logger[level]({ component: 'kafka-bus', ...fields }, message)
    this.level = LEVEL_NUMBERS[config.logLevel ?? 'warn']
    this.options = {
      defaultPartitions: config.defaultPartitions,
      sessionTimeoutMs: config.sessionTimeoutMs ?? 30_000,
      rebalanceTimeoutMs: config.rebalanceTimeoutMs ?? 60_000,
      heartbeatIntervalMs: config.heartbeatIntervalMs ?? 3_000,
      maxWaitTimeMs: config.maxWaitTimeMs ?? 500,
      partitionsConsumedConcurrently: config.partitionsConsumedConcurrently ?? 4,
      retryBackoffMs: config.retryBackoffMs ?? 1_000,
      maxRetryBackoffMs: config.maxRetryBackoffMs ?? 30_000,
      adminTimeoutMs: config.adminTimeoutMs ?? 5_000,
      connectionTimeoutMs: config.connectionTimeoutMs ?? 3_000,
      requestTimeoutMs: config.requestTimeoutMs ?? 30_000,
    }
    const sink = this.sink
    const configured = this.level
    this.kafka = new Kafka({
      brokers: config.brokers,
      clientId: config.clientId,
      connectionTimeout: this.options.connectionTimeoutMs,
      requestTimeout: this.options.requestTimeoutMs,
      logLevel: this.level,
      logCreator:
        () =>
        ({ namespace, level, log }: LogEntry) => {
          const { message, timestamp: _t, logger: _l, ...fields } = log
          // kafkajs logs every error response at ERROR, routine ones too (a rebalance in progress, a
          // leader moving); the same error reaches the code that made the request, which handles it.
          const routine =
            namespace === 'Connection' && level === KafkaLogLevel.ERROR && message.startsWith('Response ')
          const effective = routine ? KafkaLogLevel.INFO : level
          if (effective > configured) return
          sink(levelName(effective), `kafkajs ${namespace}: ${message}`, fields)
        },
    })
  }

  async ensureTopics(topics: TopicSpec[]): Promise<void> {
    if (topics.length === 0) return
    const timeout = this.options.adminTimeoutMs
    try {
      const admin = await this.getAdmin()
      await withTimeout(
        admin.createTopics({
          topics: topics.map((t) => ({
            topic: t.topic,
            numPartitions: t.partitions > 0 ? t.partitions : this.options.defaultPartitions,
            ...(this.config.replicationFactor === undefined
              ? {}
              : { replicationFactor: this.config.replicationFactor }),
          })),
          waitForLeaders: true,
          timeout,
        }),
        timeout * 2,
        'createTopics',
      )
    } catch (err) {
      // Provisioning is best effort: a broker that auto-creates topics (the mock; many dev setups)
      // still works, and one that does neither fails loudly on the first produce.
      const noController = await this.hasNoController()
      this.log(noController ? 'info' : 'warn', 'could not create topics; relying on auto-creation', {
        topics: topics.map((t) => t.topic),
        error: errorMessage(err),
        ...(noController ? { reason: 'the cluster reports no controller (librdkafka mock cluster?)' } : {}),
      })
    }
  }

  async produce(topic: string, messages: ProduceMessage[]): Promise<void> {
    if (messages.length === 0) return
    const producer = await this.getProducer()
    await producer.send({
      topic,
      acks: -1,
      messages: messages.map((m) => ({
        key: m.key ?? null,
        value: m.value,
        ...(m.partition === undefined ? {} : { partition: m.partition }),
        ...(m.headers === undefined ? {} : { headers: m.headers }),
      })),
    })
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    if (this.closed) throw new Error('KafkaBus is closed')
    const handle = new KafkaConsumerHandle(this, options)
    this.consumers.add(handle)
    try {
      await handle.start()
    } catch (err) {
      this.consumers.delete(handle)
      await handle.stop().catch(() => {})
      throw err
    }
    return {
      stop: async () => {
        await handle.stop()
        this.consumers.delete(handle)
      },
    }
  }

  /**
   * Sum over partitions of (end offset - committed offset), a group with no commit counting from the
   * earliest retained offset (consumers start from the beginning). Never hangs: if the admin calls
   * fail or time out, the answer comes from what this process's own consumers of the group have seen
   * (0 if none), and a warning is logged.
   */
  async lag(group: string, topic: string): Promise<number> {
    try {
      return await withTimeout(this.adminLag(group, topic), this.options.adminTimeoutMs, 'lag')
    } catch (err) {
      const local = this.localLag(group, topic)
      this.log('warn', 'lag: admin API failed; using this process view', {
        group,
        topic,
        lag: local,
        error: errorMessage(err),
      })
      return local
    }
  }

  /** Number of partitions of a topic as the cluster reports it (4 for topics the mock auto-created). */
  async partitionCount(topic: string): Promise<number> {
    const admin = await this.getAdmin()
    const meta = await withTimeout(
      admin.fetchTopicMetadata({ topics: [topic] }),
      this.options.adminTimeoutMs,
      'fetchTopicMetadata',
    )
    return meta.topics.find((t) => t.name === topic)?.partitions.length ?? 0
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.allSettled([...this.consumers].map((c) => c.stop()))
    this.consumers.clear()
    const producer = this.producer
    const admin = this.admin
    this.producer = undefined
    this.admin = undefined
    await Promise.allSettled([producer?.then((p) => p.disconnect()), admin?.then((a) => a.disconnect())])
  }

  /** @internal used by KafkaConsumerHandle */
  newConsumer(groupId: string, restart: () => boolean): KafkaConsumer {
    return this.kafka.consumer({
      groupId,
      sessionTimeout: this.options.sessionTimeoutMs,
      rebalanceTimeout: this.options.rebalanceTimeoutMs,
      heartbeatInterval: this.options.heartbeatIntervalMs,
      maxWaitTimeInMs: this.options.maxWaitTimeMs,
      allowAutoTopicCreation: true,
      // A crashed kafkajs consumer (e.g. too many failed commits) would otherwise stay dead silently.
      retry: { retries: 5, restartOnFailure: async () => restart() },
    })
  }

  /** @internal */
  get settings(): Readonly<KafkaBusSettings> {
    return this.options
  }

  /** @internal */
  log(level: LogLevelName, message: string, fields: Record<string, unknown> = {}): void {
    if (this.level < levelNumber(level)) return
    this.sink(level, `kafka bus: ${message}`, fields)
  }

  /** @internal */
  noteFetched(group: string, topic: string, partition: number, highWatermark: string): void {
    const p = this.partitionProgress(group, topic, partition)
    p.high = BigInt(highWatermark)
  }

  /** @internal */
  noteCommitted(group: string, topic: string, partition: number, offset: string): void {
    const p = this.partitionProgress(group, topic, partition)
    p.committed = BigInt(offset)
    if (p.high < p.committed) p.high = p.committed
  }

  private partitionProgress(group: string, topic: string, partition: number): PartitionProgress {
    const key = `${group}\u0000${topic}`
    let byPartition = this.progress.get(key)
    if (byPartition === undefined)
      this.progress.set(key, (byPartition = new Map<number, PartitionProgress>()))
    let p = byPartition.get(partition)
    if (p === undefined) byPartition.set(partition, (p = { high: 0n, committed: 0n }))
    return p
  }

  private localLag(group: string, topic: string): number {
    let sum = 0n
    for (const p of this.progress.get(`${group}\u0000${topic}`)?.values() ?? []) {
      if (p.high > p.committed) sum += p.high - p.committed
    }
    return Number(sum)
  }

  private async adminLag(group: string, topic: string): Promise<number> {
    const admin = await this.getAdmin()
    const [ends, committed] = await Promise.all([
      admin.fetchTopicOffsets(topic),
      admin.fetchOffsets({ groupId: group, topics: [topic] }),
    ])
    const committedByPartition = new Map<number, bigint>()
    for (const t of committed) {
      if (t.topic !== topic) continue
      for (const p of t.partitions) committedByPartition.set(p.partition, BigInt(p.offset))
    }
    let sum = 0n
    for (const p of ends) {
      const high = BigInt(p.high)
      const low = BigInt(p.low)
      const c = committedByPartition.get(p.partition) ?? -1n
      // A commit below the retention start reads from `low` again, as does no commit at all.
      const from = c < low ? low : c
      if (high > from) sum += high - from
    }
    return Number(sum)
  }

  private async hasNoController(): Promise<boolean> {
    try {
      const admin = await this.getAdmin()
      const cluster = await withTimeout(
        admin.describeCluster(),
        this.options.adminTimeoutMs,
        'describeCluster',
      )
      return !cluster.brokers.some((b) => b.nodeId === cluster.controller)
    } catch {
      return false
    }
  }

  private getProducer(): Promise<Producer> {
    if (this.closed) return Promise.reject(new Error('KafkaBus is closed'))
    this.producer ??= connectOnce(
      () =>
        this.kafka.producer({
          createPartitioner: Partitioners.DefaultPartitioner,
          idempotent: false,
          allowAutoTopicCreation: true,
        }),
      () => (this.producer = undefined),
    )
    return this.producer
  }

  private getAdmin(): Promise<Admin> {
    if (this.closed) return Promise.reject(new Error('KafkaBus is closed'))
    this.admin ??= connectOnce(
      () => this.kafka.admin({ retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 } }),
      () => (this.admin = undefined),
    )
    return withTimeout(this.admin, this.options.adminTimeoutMs, 'admin connect')
  }
}

/** One Bus consumer: a kafkajs consumer in a group, committing after each handled batch. */
class KafkaConsumerHandle {
  private consumer: KafkaConsumer | undefined
  private stopping: Promise<void> | undefined
  private readonly abort = new AbortController()
  /** Consecutive handler failures per partition, for the redelivery backoff. */
  private readonly failures = new Map<string, number>()
  private readonly maxRecords: number
  private readonly maxBytes: number

  constructor(
    private readonly bus: KafkaBus,
    private readonly options: ConsumeOptions,
  ) {
    this.maxRecords = Math.max(1, options.maxBatchRecords ?? Number.POSITIVE_INFINITY)
    this.maxBytes = Math.max(1, options.maxBatchBytes ?? Number.POSITIVE_INFINITY)
  }

  async start(): Promise<void> {
    const { group, topics } = this.options
    const consumer = this.bus.newConsumer(group, () => this.stopping === undefined)
    this.consumer = consumer
    consumer.on(consumer.events.CRASH, (event) => {
      this.bus.log('error', 'consumer crashed', {
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
      partitionsConsumedConcurrently: this.bus.settings.partitionsConsumedConcurrently,
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

  private async eachBatch(consumer: KafkaConsumer, payload: EachBatchPayload): Promise<void> {
    const { batch } = payload
    const { topic, partition } = batch
    const { group, handler } = this.options
    this.bus.noteFetched(group, topic, partition, batch.highWatermark)
    const chunks = split(batch.messages, this.maxRecords, this.maxBytes)

    for (let i = 0; i < chunks.length; i++) {
      if (!payload.isRunning() || payload.isStale()) return
      const chunk = chunks[i]!
      const records = chunk.map((m) => toRecord(topic, partition, m))
      const recordBatch: RecordBatch = { topic, partition, records }
      const first = chunk[0]!.offset

      // A slow handler must not cost us the group membership; heartbeat() is rate-limited by kafkajs.
      const beat = setInterval(
        () => void payload.heartbeat().catch(() => {}),
        Math.max(100, Math.floor(this.bus.settings.heartbeatIntervalMs / 2)),
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
        const { retryBackoffMs, maxRetryBackoffMs } = this.bus.settings
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
      this.bus.noteCommitted(group, topic, partition, next)
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
      this.bus.log('error', 'handler failed; batch will be redelivered', fields)
      return
    }
    try {
      onError(err, batch)
    } catch (e) {
      this.bus.log('error', 'onError threw', { ...fields, onErrorError: errorMessage(e) })
    }
  }
}

function split(messages: KafkaMessage[], maxRecords: number, maxBytes: number): KafkaMessage[][] {
  const chunks: KafkaMessage[][] = []
  let current: KafkaMessage[] = []
  let bytes = 0
  for (const m of messages) {
    const size = m.value?.length ?? 0
    if (current.length > 0 && (current.length >= maxRecords || bytes + size > maxBytes)) {
      chunks.push(current)
      current = []
      bytes = 0
    }
    current.push(m)
    bytes += size
  }
  if (current.length > 0) chunks.push(current)
  return chunks
}

function toRecord(topic: string, partition: number, m: KafkaMessage): BusRecord {
  return {
    topic,
    partition,
    offset: m.offset,
    key: m.key == null ? null : m.key.toString('utf8'),
    value: m.value ?? Buffer.alloc(0),
    headers: headersToStrings(m.headers),
    timestamp: Number(m.timestamp),
  }
}

function headersToStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  if (headers === undefined) return out
  for (const [name, value] of Object.entries(headers)) {
    // kafkajs folds repeated header names into an array; the port has one value per name, the last.
    const v = Array.isArray(value) ? value[value.length - 1] : value
    if (v !== undefined) out[name] = typeof v === 'string' ? v : v.toString('utf8')
  }
  return out
}

function maxOffset(a: string, b: string): string {
  return BigInt(a) > BigInt(b) ? a : b
}

function levelName(level: KafkaLogLevel): LogLevelName {
  switch (level) {
    case KafkaLogLevel.ERROR:
    case KafkaLogLevel.NOTHING:
      return 'error'
    case KafkaLogLevel.WARN:
      return 'warn'
    case KafkaLogLevel.INFO:
      return 'info'
    default:
      return 'debug'
  }
}

function levelNumber(level: LogLevelName): KafkaLogLevel {
  return LEVEL_NUMBERS[level]
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`
  return String(err)
}

/** Connect a kafkajs client once; forget a failed attempt so the next call tries again. */
function connectOnce<T extends { connect(): Promise<void> }>(
  create: () => T,
  forget: () => void,
): Promise<T> {
  const client = create()
  const connected = client.connect().then(() => client)
  connected.catch(() => forget())
  return connected
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms)
  })
  // The loser keeps running; make sure its rejection is not reported as unhandled.
  promise.catch(() => {})
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
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
