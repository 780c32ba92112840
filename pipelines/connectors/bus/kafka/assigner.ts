/**
 * The group's partition assignment: kafkajs' round robin, with an entry for every member, fitted
 * to two ways librdkafka's mock cluster (Sluice's local Kafka stand-in: tests, bench, development)
 * completes a rebalance differently from a real broker.
 *
 * - kafkajs' RoundRobinAssigner leaves out of its answer every member it gave no partition (more
 *   members than partitions: the 1-partition control topic with two workers or more). Kafka's
 *   protocol allows that (the coordinator hands such a member an empty assignment), but the mock
 *   completes a SyncGroup only once the leader has given an assignment to every member: without one
 *   for each, every rebalance of the group ran into the mock's sync timeout, the members retried,
 *   gave up, restarted as new members and set off the next rebalance, and the group never settled.
 *   Naming every member, with an empty assignment where it gets nothing, is what librdkafka's and
 *   Java's own assignors send, so it changes nothing on a real broker.
 * - The mock completes the sync as soon as the leader's SyncGroup arrives, and answers a member's
 *   SyncGroup that comes after it with INVALID_REQUEST, which kafkajs does not retry: the member's
 *   consumer crashes (group-consumer.ts starts it again, as a new member: one more rebalance). A
 *   real broker hands a late member the assignment it keeps. The leader sends its SyncGroup after a
 *   metadata round trip while the others send theirs at once, so on a busy machine the leader often
 *   came first. A deployment on the mock (the tests and the bench set it) therefore has the leader
 *   wait before answering (`KAFKA_LEADER_SYNC_DELAY_MS`, 1 s there), which is time the mock holds
 *   every rebalance for anyway. On a real broker it is 0 (the default): Sluice does not tell one
 *   broker from another.
 *
 * The name and version stay RoundRobinAssigner's, and the partitions go where kafkajs puts them:
 * workers of an older Sluice in the same group agree on the protocol and on the assignment.
 */
import { AssignerProtocol, PartitionAssigners, type PartitionAssigner } from 'kafkajs'

/**
 * The assigner of a consumer group: kafkajs' round robin naming every member, whose leader waits
 * `leaderSyncDelayMs` before handing its assignment back when the group has other members.
 */
export function roundRobinToEveryMember(leaderSyncDelayMs = 0): PartitionAssigner {
  return (config) => {
    const roundRobin = PartitionAssigners.roundRobin(config)
    return {
      name: roundRobin.name,
      version: roundRobin.version,
      protocol: (subscription) => roundRobin.protocol(subscription),
      async assign(group) {
        const given = await roundRobin.assign(group)
        const named = new Set(given.map((a) => a.memberId))
        const nothing = AssignerProtocol.MemberAssignment.encode({
          version: roundRobin.version,
          assignment: {},
          userData: Buffer.alloc(0),
        })
        const idle = group.members
          .filter((m) => !named.has(m.memberId))
          .map((m) => ({ memberId: m.memberId, memberAssignment: nothing }))
        if (leaderSyncDelayMs > 0 && group.members.length > 1)
          await new Promise((resolve) => setTimeout(resolve, leaderSyncDelayMs))
        return [...given, ...idle]
      },
    }
  }
}
