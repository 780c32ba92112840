import { describe, expect, it } from 'vitest'
import { fetchLimits } from '../../pipelines/connectors/bus/kafka/group-consumer.ts'

describe("the consumer's fetch limits", () => {
  it('fetch at least a whole batch of the stage per partition, two per fetch, never under kafkajs defaults', () => {
    expect(fetchLimits(8 * 1024 * 1024)).toEqual({
      maxBytesPerPartition: 8 * 1024 * 1024,
      maxBytes: 16 * 1024 * 1024,
    })
    expect(fetchLimits(64 * 1024)).toEqual({ maxBytesPerPartition: 1024 * 1024, maxBytes: 10 * 1024 * 1024 })
    expect(fetchLimits(undefined)).toEqual({ maxBytesPerPartition: 1024 * 1024, maxBytes: 10 * 1024 * 1024 })
  })
})
