import { Kafka, logLevel, type Admin } from 'kafkajs'

/** One look at a consumer group on one topic: offsets committed per partition and the ends. */
export interface GroupSample {
  at: number
  committed: number[]
  ends: number[]
  /** A member was handling a batch of the group at that moment (work under way, not a stall). */
  busy: boolean
}

export interface WatchedGroup {
  group: string
  topic: string
}

/**
 * The longest time a consumer group made no progress while it had work: from the last commit (or
 * from the moment work appeared while it was idle) to the next commit, over samples taken in
 * order. Progress is any partition's committed offset moving forward, or a member handling a
 * batch: so one stalled partition does not count while the group's other members keep working,
 * and a slow batch on a busy machine is work, not a stall. What is left is the group sitting idle
 * with records waiting: a rebalance, a backoff, a member gone.
 */
export function longestStall(samples: readonly GroupSample[]): { ms: number; from: number; to: number } {
  let worst = { ms: 0, from: 0, to: 0 }
  let since: number | undefined
  let previous: GroupSample | undefined
  for (const s of samples) {
    const lag = s.ends.reduce((sum, end, p) => sum + Math.max(0, end - (s.committed[p] ?? 0)), 0)
    const moved = previous !== undefined && s.committed.some((c, p) => c > (previous!.committed[p] ?? 0))
    const progressed = moved || s.busy
    if (progressed && since !== undefined && s.at - since > worst.ms)
      worst = { ms: s.at - since, from: since, to: s.at }
    if (progressed) since = lag > 0 && !s.busy ? s.at : undefined
    else if (lag === 0) since = undefined
    else since ??= s.at
    previous = s
  }
  return worst
}

/**
 * Samples the committed offsets and the ends of the given groups' topics every `intervalMs`,
 * through the Kafka admin API (OffsetFetch and ListOffsets, which librdkafka's mock answers), and
 * whether a member is handling a batch (`busy`), until stop(). A sample that fails (a broker busy
 * for a moment) is skipped.
 */
export function watchGroups(
  brokers: string[],
  groups: readonly WatchedGroup[],
  busy: (group: string) => Promise<boolean>,
  intervalMs = 250,
) {
  const kafka = new Kafka({ brokers, clientId: 'group-progress', logLevel: logLevel.NOTHING })
  const admin: Admin = kafka.admin()
  const samples = new Map<string, GroupSample[]>(groups.map((g) => [g.group, []]))
  let stopped = false
  const sampleOnce = async (g: WatchedGroup): Promise<GroupSample> => {
    const [ends, offsets, working] = await Promise.all([
      admin.fetchTopicOffsets(g.topic),
      admin.fetchOffsets({ groupId: g.group, topics: [g.topic] }),
      busy(g.group).catch(() => false),
    ])
    const partitions = Math.max(...ends.map((e) => e.partition)) + 1
    const committed = new Array<number>(partitions).fill(0)
    const end = new Array<number>(partitions).fill(0)
    for (const e of ends) end[e.partition] = Number(e.high)
    for (const p of offsets.find((t) => t.topic === g.topic)?.partitions ?? [])
      committed[p.partition] = Math.max(0, Number(p.offset))
    return { at: Date.now(), committed, ends: end, busy: working }
  }
  const loop = (async () => {
    await admin.connect()
    while (!stopped) {
      const started = Date.now()
      await Promise.all(
        groups.map((g) =>
          sampleOnce(g).then(
            (s) => void samples.get(g.group)!.push(s),
            () => undefined,
          ),
        ),
      )
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, intervalMs - (Date.now() - started))))
    }
  })()
  return {
    samples,
    /** The latest sample of a group, if any. */
    latest: (group: string) => samples.get(group)!.at(-1),
    async stop() {
      stopped = true
      await loop.catch(() => undefined)
      await admin.disconnect()
    },
  }
}
