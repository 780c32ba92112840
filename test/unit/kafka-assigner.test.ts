import { AssignerProtocol, type Cluster, type Logger } from 'kafkajs'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { roundRobinToEveryMember } from '../../pipelines/connectors/bus/kafka/assigner.ts'

/** The one thing kafkajs' round robin asks of the cluster: a topic's partitions. */
const onePartition = { findTopicPartitionMetadata: () => [{ partitionId: 0 }] } as unknown as Cluster
const config = { cluster: onePartition, groupId: 'g', logger: {} as Logger }
const members = ['m-a', 'm-b', 'm-c'].map((memberId) => ({ memberId, memberMetadata: Buffer.alloc(0) }))
const decoded = (assignment: { memberId: string; memberAssignment: Buffer }[]) =>
  assignment.map((a) => [
    a.memberId,
    AssignerProtocol.MemberAssignment.decode(a.memberAssignment)?.assignment,
  ])

describe('roundRobinToEveryMember', () => {
  afterEach(() => vi.useRealTimers())

  it("names every member, with an empty assignment for those kafkajs' round robin leaves out", async () => {
    const assigner = roundRobinToEveryMember()(config)
    expect(assigner.name).toBe('RoundRobinAssigner')
    expect(decoded(await assigner.assign({ members, topics: ['control'] }))).toEqual([
      ['m-a', { control: [0] }],
      ['m-b', {}],
      ['m-c', {}],
    ])
  })

  it('answers at once by default, and after the configured leader delay when the group has other members', async () => {
    vi.useFakeTimers()
    const settled = (promise: Promise<unknown>) => {
      let done = false
      void promise.then(() => (done = true))
      return () => done
    }
    const immediate = settled(roundRobinToEveryMember()(config).assign({ members, topics: ['t'] }))
    await vi.advanceTimersByTimeAsync(0)
    expect(immediate()).toBe(true)

    const delayed = roundRobinToEveryMember(1_000)(config)
    const waiting = settled(delayed.assign({ members, topics: ['t'] }))
    await vi.advanceTimersByTimeAsync(999)
    expect(waiting()).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(waiting()).toBe(true)

    // Alone in its group, a leader has nobody to wait for.
    const alone = settled(delayed.assign({ members: members.slice(0, 1), topics: ['t'] }))
    await vi.advanceTimersByTimeAsync(0)
    expect(alone()).toBe(true)
  })
})
