/**
 * The admin side of the Kafka bus: topic provisioning, partition counts and the broker's view of a
 * group's lag. Every round trip is bounded by adminTimeoutMs, so none of them can hang a caller.
 */
import type { Admin, Kafka } from 'kafkajs'
import type { TopicSpec } from '../bus.ts'
import { connectOnce } from './client.ts'
import { lagFromOffsets } from './lag.ts'
import { errorMessage, type LogBridge } from './log-bridge.ts'

export interface AdminSettings {
  /** Partitions for topics whose TopicSpec gives none. */
  defaultPartitions: number
  /** Omitted: the broker's default.replication.factor. */
  replicationFactor?: number | undefined
  adminTimeoutMs: number
}

export class TopicAdmin {
  private admin: Promise<Admin> | undefined

  constructor(
    private readonly kafka: Kafka,
    private readonly settings: AdminSettings,
    private readonly logs: LogBridge,
    private readonly isClosed: () => boolean,
  ) {}

  async ensureTopics(topics: TopicSpec[]): Promise<void> {
    if (topics.length === 0) return
    const timeout = this.settings.adminTimeoutMs
    try {
      const admin = await this.connect()
      await withTimeout(
        admin.createTopics({
          topics: topics.map((t) => ({
            topic: t.topic,
            numPartitions: t.partitions > 0 ? t.partitions : this.settings.defaultPartitions,
            ...(this.settings.replicationFactor === undefined
              ? {}
              : { replicationFactor: this.settings.replicationFactor }),
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
      this.logs.log(noController ? 'info' : 'warn', 'could not create topics; relying on auto-creation', {
        topics: topics.map((t) => t.topic),
        error: errorMessage(err),
        ...(noController ? { reason: 'the cluster reports no controller (librdkafka mock cluster?)' } : {}),
      })
    }
  }

  /** Number of partitions of a topic as the cluster reports it (4 for topics the mock auto-created). */
  async partitionCount(topic: string): Promise<number> {
    const admin = await this.connect()
    const meta = await withTimeout(
      admin.fetchTopicMetadata({ topics: [topic] }),
      this.settings.adminTimeoutMs,
      'fetchTopicMetadata',
    )
    return meta.topics.find((t) => t.name === topic)?.partitions.length ?? 0
  }

  /** The group's lag on the topic from ListOffsets and OffsetFetch; rejects when they fail or time out. */
  lag(group: string, topic: string): Promise<number> {
    return withTimeout(this.offsetsLag(group, topic), this.settings.adminTimeoutMs, 'lag')
  }

  disconnect(): Promise<void> | undefined {
    const admin = this.admin
    this.admin = undefined
    return admin?.then((a) => a.disconnect())
  }

  private async offsetsLag(group: string, topic: string): Promise<number> {
    const admin = await this.connect()
    const [ends, committed] = await Promise.all([
      admin.fetchTopicOffsets(topic),
      admin.fetchOffsets({ groupId: group, topics: [topic] }),
    ])
    return lagFromOffsets(topic, ends, committed)
  }

  private async hasNoController(): Promise<boolean> {
    try {
      const admin = await this.connect()
      const cluster = await withTimeout(
        admin.describeCluster(),
        this.settings.adminTimeoutMs,
        'describeCluster',
      )
      return !cluster.brokers.some((b) => b.nodeId === cluster.controller)
    } catch {
      return false
    }
  }

  private connect(): Promise<Admin> {
    if (this.isClosed()) return Promise.reject(new Error('KafkaBus is closed'))
    this.admin ??= connectOnce(
      () => this.kafka.admin({ retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 } }),
      () => (this.admin = undefined),
    )
    return withTimeout(this.admin, this.settings.adminTimeoutMs, 'admin connect')
  }
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
