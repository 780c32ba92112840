/**
 * Produce over Kafka: a send resolves once every in-sync replica has the records (acks=-1). The
 * producer is neither idempotent nor transactional: librdkafka's mock cluster, our local Kafka
 * stand-in, has no controller and rejects both; every sink downstream is idempotent instead.
 */
import { Partitioners, type Kafka, type Producer } from 'kafkajs'
import type { ProduceMessage } from '../bus.ts'
import { connectOnce } from './client.ts'
import { CoalescingSender } from './coalescing-sender.ts'

/**
 * Requests in flight per topic before sends coalesce (coalescing-sender.ts), and the most value
 * bytes a coalesced request carries: under Kafka's default message.max.bytes (1 MB), which bounds
 * a record batch, with room for the records' keys and headers.
 */
const MAX_IN_FLIGHT_PER_TOPIC = 4
const COALESCED_MAX_BYTES = 768 * 1024

export class DurableProducer {
  private producer: Promise<Producer> | undefined
  private readonly sender = new CoalescingSender<ProduceMessage>(
    (topic, messages) => this.sendNow(topic, messages),
    {
      maxInFlight: MAX_IN_FLIGHT_PER_TOPIC,
      maxBytes: COALESCED_MAX_BYTES,
      size: (m) => m.value.length,
    },
  )

  constructor(
    private readonly kafka: Kafka,
    private readonly isClosed: () => boolean,
  ) {}

  send(topic: string, messages: ProduceMessage[]): Promise<void> {
    return this.sender.send(topic, messages)
  }

  private async sendNow(topic: string, messages: ProduceMessage[]): Promise<void> {
    const producer = await this.connect()
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

  disconnect(): Promise<void> | undefined {
    const producer = this.producer
    this.producer = undefined
    return producer?.then((p) => p.disconnect())
  }

  private connect(): Promise<Producer> {
    if (this.isClosed()) return Promise.reject(new Error('KafkaBus is closed'))
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
}
