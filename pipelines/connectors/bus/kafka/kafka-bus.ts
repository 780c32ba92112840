/**
 * The Bus port over Kafka (kafkajs). This class wires the parts: admin.ts (topics, partition
 * counts, lag from the broker), producer.ts, group-consumer.ts, lag.ts (the fallback view of our
 * own consumers) and log-bridge.ts.
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
 * - A SyncGroup completes only once the leader has given every member an assignment, and a member's
 *   SyncGroup after the leader's is answered INVALID_REQUEST: assigner.ts fits the first, and the
 *   second when told to (leaderSyncDelayMs, KAFKA_LEADER_SYNC_DELAY_MS).
 */
import type { Bus, ConsumeOptions, Consumer, ProduceMessage, TopicSpec } from '../bus.ts'
import { TopicAdmin } from './admin.ts'
import { createClient } from './client.ts'
import { KafkaConsumerHandle, type ConsumerContext } from './group-consumer.ts'
import { ConsumerProgress } from './lag.ts'
import { errorMessage, LogBridge, type KafkaBusLogger, type KafkaBusLogLevel } from './log-bridge.ts'
import { DurableProducer } from './producer.ts'

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
  /**
   * How long a group's leader waits before sending its assignment when the group has other
   * members (assigner.ts): 1000 on librdkafka's mock cluster, which answers a member's SyncGroup
   * after the leader's with INVALID_REQUEST; 0 (the default) on Kafka.
   */
  leaderSyncDelayMs?: number
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

type KafkaBusSettings = Required<Omit<KafkaBusOptions, 'replicationFactor' | 'logger' | 'logLevel'>> &
  Pick<KafkaBusOptions, 'replicationFactor'>

export class KafkaBus implements Bus {
  readonly kind = 'kafka' as const
  private readonly logs: LogBridge
  private readonly admin: TopicAdmin
  private readonly producer: DurableProducer
  private readonly consumerContext: ConsumerContext
  private readonly consumers = new Set<KafkaConsumerHandle>()
  private readonly progress = new ConsumerProgress()
  private closed = false

  constructor(config: KafkaBusOptions) {
    if (config.brokers.length === 0) throw new Error('KafkaBus: no brokers given')
    this.logs = new LogBridge(config.logger, config.logLevel)
    const settings: KafkaBusSettings = {
      brokers: config.brokers,
      clientId: config.clientId,
      defaultPartitions: config.defaultPartitions,
      replicationFactor: config.replicationFactor,
      sessionTimeoutMs: config.sessionTimeoutMs ?? 30_000,
      rebalanceTimeoutMs: config.rebalanceTimeoutMs ?? 60_000,
      heartbeatIntervalMs: config.heartbeatIntervalMs ?? 3_000,
      leaderSyncDelayMs: config.leaderSyncDelayMs ?? 0,
      maxWaitTimeMs: config.maxWaitTimeMs ?? 500,
      partitionsConsumedConcurrently: config.partitionsConsumedConcurrently ?? 4,
      retryBackoffMs: config.retryBackoffMs ?? 1_000,
      maxRetryBackoffMs: config.maxRetryBackoffMs ?? 30_000,
      adminTimeoutMs: config.adminTimeoutMs ?? 5_000,
      connectionTimeoutMs: config.connectionTimeoutMs ?? 3_000,
      requestTimeoutMs: config.requestTimeoutMs ?? 30_000,
    }
    const kafka = createClient(settings, this.logs)
    const isClosed = () => this.closed
    this.admin = new TopicAdmin(kafka, settings, this.logs, isClosed)
    this.producer = new DurableProducer(kafka, isClosed)
    this.consumerContext = { kafka, settings, logs: this.logs, progress: this.progress }
  }

  ensureTopics(topics: TopicSpec[]): Promise<void> {
    return this.admin.ensureTopics(topics)
  }

  produce(topic: string, messages: ProduceMessage[]): Promise<void> {
    return this.producer.send(topic, messages)
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    if (this.closed) throw new Error('KafkaBus is closed')
    const handle = new KafkaConsumerHandle(this.consumerContext, options)
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
   * Records produced but not yet committed by the group (see lag.ts). Never hangs: if the admin
   * calls fail or time out, the answer comes from what this process's own consumers of the group
   * have seen (0 if none), and a warning is logged.
   */
  async lag(group: string, topic: string): Promise<number> {
    try {
      return await this.admin.lag(group, topic)
    } catch (err) {
      const local = this.progress.lag(group, topic)
      this.logs.log('warn', 'lag: admin API failed; using this process view', {
        group,
        topic,
        lag: local,
        error: errorMessage(err),
      })
      return local
    }
  }

  /** Number of partitions of a topic as the cluster reports it (4 for topics the mock auto-created). */
  partitionCount(topic: string): Promise<number> {
    return this.admin.partitionCount(topic)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.allSettled([...this.consumers].map((c) => c.stop()))
    this.consumers.clear()
    await Promise.allSettled([this.producer.disconnect(), this.admin.disconnect()])
  }
}
