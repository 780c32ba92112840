/** Read-only figures of the local log: how far a group trails, and what is stored. */
import type { LogStore } from './log-store.ts'

export interface PartitionStats {
  partition: number
  /** Offset of the oldest stored record (equals nextOffset when the partition is empty). */
  firstOffset: number
  nextOffset: number
  /** Records currently stored. */
  records: number
}

export interface TopicStats {
  topic: string
  partitions: PartitionStats[]
  records: number
}

export interface LogStats {
  topics: TopicStats[]
  records: number
}

/** Records produced but not yet committed by the group, summed over the topic's partitions. */
export function groupLag(store: LogStore, group: string, topic: string, partitions: number): number {
  let lag = 0
  for (let partition = 0; partition < partitions; partition++) {
    const first = store.firstOffset(topic, partition)
    const position = Math.max(store.committed(group, topic, partition) ?? first, first)
    lag += store.nextOffset(topic, partition) - position
  }
  return lag
}

/**
 * How long the oldest record the group has not committed has waited, ms, over the topic's
 * partitions (0 when the group is caught up). Reads one record header per partition.
 */
export function groupBacklogAgeMs(
  store: LogStore,
  group: string,
  topic: string,
  partitions: number,
  now: number,
): number {
  let oldest = now
  for (let partition = 0; partition < partitions; partition++) {
    const first = store.firstOffset(topic, partition)
    const position = Math.max(store.committed(group, topic, partition) ?? first, first)
    if (position >= store.nextOffset(topic, partition)) continue
    const produced = store.producedAt(topic, partition, position)
    if (produced !== undefined) oldest = Math.min(oldest, produced)
  }
  return Math.max(0, now - oldest)
}

/** What is stored, per topic and partition. Counting walks the keys, so keep it off hot paths. */
export function logStats(store: LogStore, topics: ReadonlyMap<string, number>): LogStats {
  const sorted = [...topics].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  const stats = sorted.map(([topic, partitions]) => topicStats(store, topic, partitions))
  return { topics: stats, records: stats.reduce((sum, topic) => sum + topic.records, 0) }
}

function topicStats(store: LogStore, topic: string, partitions: number): TopicStats {
  const stats: PartitionStats[] = []
  for (let partition = 0; partition < partitions; partition++) {
    stats.push({
      partition,
      firstOffset: store.firstOffset(topic, partition),
      nextOffset: store.nextOffset(topic, partition),
      records: store.countRecords(topic, partition),
    })
  }
  return { topic, partitions: stats, records: stats.reduce((sum, p) => sum + p.records, 0) }
}
