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
 *   came first; on the mock it now waits a moment (MOCK_LEADER_PAUSE_MS) before answering, which
 *   is time the mock holds every rebalance for anyway. On a real broker it does not wait.
 *
 * The name and version stay RoundRobinAssigner's, and the partitions go where kafkajs puts them:
 * workers of an older Sluice in the same group agree on the protocol and on the assignment.
 */
import {
  AssignerProtocol,
  PartitionAssigners,
  type BrokerMetadata,
  type Cluster,
  type PartitionAssigner,
} from 'kafkajs'

/** How long a leader on librdkafka's mock lets the other members' SyncGroups arrive before its own. */
export const MOCK_LEADER_PAUSE_MS = 1_000

/** The cluster id librdkafka's mock gives itself (rd_kafka_mock_cluster_new: "mockCluster%lx"). */
const MOCK_CLUSTER_ID = /^mockCluster[0-9a-f]+$/

export const roundRobinToEveryMember: PartitionAssigner = (config) => {
  const roundRobin = PartitionAssigners.roundRobin(config)
  let onMock: Promise<boolean> | undefined
  return {
    name: roundRobin.name,
    version: roundRobin.version,
    protocol: (subscription) => roundRobin.protocol(subscription),
    async assign(group) {
      onMock ??= isMockCluster(config.cluster)
      const [given, mock] = await Promise.all([roundRobin.assign(group), onMock])
      const named = new Set(given.map((a) => a.memberId))
      const nothing = AssignerProtocol.MemberAssignment.encode({
        version: roundRobin.version,
        assignment: {},
        userData: Buffer.alloc(0),
      })
      const idle = group.members
        .filter((m) => !named.has(m.memberId))
        .map((m) => ({ memberId: m.memberId, memberAssignment: nothing }))
      if (mock && group.members.length > 1)
        await new Promise((resolve) => setTimeout(resolve, MOCK_LEADER_PAUSE_MS))
      return [...given, ...idle]
    },
  }
}

/** Whether the brokers are librdkafka's mock cluster, by the id its Metadata answer carries. */
async function isMockCluster(cluster: Cluster): Promise<boolean> {
  try {
    // Metadata v2 on carries the cluster id; kafkajs does not type it.
    const metadata = (await cluster.metadata()) as BrokerMetadata & { clusterId?: string | null }
    return typeof metadata.clusterId === 'string' && MOCK_CLUSTER_ID.test(metadata.clusterId)
  } catch {
    return false
  }
}
