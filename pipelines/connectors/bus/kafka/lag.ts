/**
 * A group's lag on a topic: from the broker's offsets when its admin API answers, else from what
 * this process's own consumers of the group have seen.
 */

export interface PartitionEnds {
  partition: number
  low: string
  high: string
}

export interface CommittedOffsets {
  topic: string
  partitions: { partition: number; offset: string }[]
}

/**
 * Sum over partitions of (end offset - committed offset), a group with no commit counting from the
 * earliest retained offset (consumers start from the beginning).
 */
export function lagFromOffsets(topic: string, ends: PartitionEnds[], committed: CommittedOffsets[]): number {
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

interface PartitionProgress {
  /** Offset after the last record the broker had when we last fetched. */
  high: bigint
  /** Offset committed by this process (next to read). */
  committed: bigint
}

/** Fallback for lag when the admin API does not answer: what our own consumers have seen. */
export class ConsumerProgress {
  private readonly progress = new Map<string, Map<number, PartitionProgress>>()

  noteFetched(group: string, topic: string, partition: number, highWatermark: string): void {
    const p = this.partitionProgress(group, topic, partition)
    p.high = BigInt(highWatermark)
  }

  noteCommitted(group: string, topic: string, partition: number, offset: string): void {
    const p = this.partitionProgress(group, topic, partition)
    p.committed = BigInt(offset)
    if (p.high < p.committed) p.high = p.committed
  }

  /** 0 when no consumer of the group in this process has fetched from the topic. */
  lag(group: string, topic: string): number {
    let sum = 0n
    for (const p of this.progress.get(`${group}\u0000${topic}`)?.values() ?? []) {
      if (p.high > p.committed) sum += p.high - p.committed
    }
    return Number(sum)
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
}
