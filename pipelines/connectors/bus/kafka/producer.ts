/**
 * Produce over Kafka: a send resolves once every in-sync replica has the records (acks=-1). The
 * producer is neither idempotent nor transactional: librdkafka's mock cluster, our local Kafka
 * stand-in, has no controller and rejects both; every sink downstream is idempotent instead.
 */
import { Partitioners, type Kafka, type Producer } from 'kafkajs'
import type { ProduceMessage } from '../bus.ts'
import { connectOnce } from './client.ts'

export class DurableProducer {
  private producer: Promise<Producer> | undefined

  constructor(
    private readonly kafka: Kafka,
    private readonly isClosed: () => boolean,
  ) {}

  async send(topic: string, messages: ProduceMessage[]): Promise<void> {
    if (messages.length === 0) return
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
