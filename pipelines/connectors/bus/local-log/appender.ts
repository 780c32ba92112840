/**
 * The produce path of the local log: routes each message to its partition, encodes it, and
 * appends a call's records in one write that resolves once it is on disk.
 *
 * Group commit: all writes of one event turn share one lmdb transaction (lmdb's event-turn
 * batching), so concurrent produce() calls share one fsync.
 */
import { partitionForKey, type ProduceMessage } from '../bus.ts'
import type { LogStore } from './log-store.ts'
import { partitionSignal, type Wakeups } from './wakeups.ts'

export class Appender {
  private readonly roundRobin = new Map<string, number>()

  constructor(
    private readonly store: LogStore,
    private readonly wakeups: Wakeups,
  ) {}

  /**
   * Appends the messages to a topic of `partitions` partitions and wakes the consumers of the
   * partitions written. Resolves, once durable, to whether this call created the topic; a
   * partition out of range throws before anything is written.
   */
  append(topic: string, partitions: number, messages: ProduceMessage[]): Promise<boolean> {
    const timestamp = Date.now()
    if (messages.length === 1) {
      // Every upload: one record, one partition.
      const partition = this.partitionOf(topic, partitions, messages[0]!)
      return this.store.appendOne(topic, partitions, partition, messages[0]!, timestamp).then((created) => {
        this.wakeups.notify(partitionSignal(topic, partition))
        return created
      })
    }
    const byPartition = new Map<number, ProduceMessage[]>()
    for (const message of messages) {
      const partition = this.partitionOf(topic, partitions, message)
      const values = byPartition.get(partition) ?? []
      values.push(message)
      byPartition.set(partition, values)
    }
    // Encoded by LogStore.append (into a body's headroom when it has one). A then, not an await:
    // its caller awaits anyway.
    return this.store.append(topic, partitions, byPartition, timestamp).then((created) => {
      for (const partition of byPartition.keys()) this.wakeups.notify(partitionSignal(topic, partition))
      return created
    })
  }

  private partitionOf(topic: string, partitions: number, message: ProduceMessage): number {
    const partition =
      message.partition ?? partitionForKey(message.key, partitions, this.nextRoundRobin(topic, message.key))
    if (!Number.isInteger(partition) || partition < 0 || partition >= partitions) {
      throw new RangeError(`partition ${partition} out of range for ${topic} (${partitions} partitions)`)
    }
    return partition
  }

  private nextRoundRobin(topic: string, key: string | undefined): number {
    const counter = this.roundRobin.get(topic) ?? 0
    if (key === undefined) this.roundRobin.set(topic, counter + 1)
    return counter
  }
}
