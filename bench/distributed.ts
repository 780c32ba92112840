import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'

/** KAFKA_BROKERS and CLICKHOUSE_URL set and answering. */
export async function distributedReachable(): Promise<{ ok: true } | { ok: false; reason: string }> {
  const brokers = (process.env.KAFKA_BROKERS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  const clickhouse = process.env.CLICKHOUSE_URL ?? ''
  if (brokers.length === 0 || !clickhouse)
    return {
      ok: false,
      reason: 'KAFKA_BROKERS and CLICKHOUSE_URL must be set (Kafka and ClickHouse are not reachable)',
    }
  const broker = brokers[0]!
  const [host, port] = broker.includes(':')
    ? [broker.slice(0, broker.lastIndexOf(':')), Number(broker.slice(broker.lastIndexOf(':') + 1))]
    : [broker, 9092]
  const kafkaOk = await new Promise<boolean>((resolve) => {
    const socket = connect({ host, port, timeout: 3000 })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('timeout', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(false))
  })
  if (!kafkaOk) return { ok: false, reason: `Kafka is not reachable at ${broker} (KAFKA_BROKERS)` }
  try {
    const res = await fetch(new URL('/ping', clickhouse), { signal: AbortSignal.timeout(3000) })
    if (!res.ok)
      return {
        ok: false,
        reason: `ClickHouse at ${clickhouse} answered ${res.status} to /ping (CLICKHOUSE_URL)`,
      }
  } catch (err) {
    return {
      ok: false,
      reason: `ClickHouse is not reachable at ${clickhouse} (CLICKHOUSE_URL): ${String(err)}`,
    }
  }
  return { ok: true }
}

/** A database and a topic prefix of this run's own on the shared Kafka and ClickHouse. */
export function distributedIsolation(): { CLICKHOUSE_DATABASE: string; SLUICE_TOPIC_PREFIX: string } {
  const tag = randomBytes(4).toString('hex')
  return { CLICKHOUSE_DATABASE: `sluice_bench_${tag}`, SLUICE_TOPIC_PREFIX: `sluice.bench.${tag}.` }
}

/**
 * When neither KAFKA_BROKERS nor CLICKHOUSE_URL is set, the bench brings its own, as the tests do
 * (DESIGN.md, "Testing"): librdkafka's mock cluster of 3 brokers (kcat) and the chdb-backed
 * ClickHouse stand-in, both stopped by the returned function. Sets the variables for this process
 * and the Sluice children it starts. A stand-in is not a server: its figures say what Sluice's
 * distributed code path costs, not what a ClickHouse server does.
 */
export async function startLocalServices(): Promise<
  { source: string; enginePid: number | undefined; stop: () => Promise<void> } | undefined
> {
  if (process.env.KAFKA_BROKERS || process.env.CLICKHOUSE_URL) return undefined
  const [{ kafkaForTests }, { clickhouseForTests }] = await Promise.all([
    import('../test/helpers/kafka-mock.ts'),
    import('../test/helpers/clickhouse-standin.ts'),
  ])
  const kafka = await kafkaForTests()
  const clickhouse = await clickhouseForTests().catch(async (err: unknown) => {
    await kafka.stop()
    throw err
  })
  Object.assign(process.env, {
    // The settings a Sluice on the mock cluster needs (KAFKA_LEADER_SYNC_DELAY_MS), unless set.
    ...Object.fromEntries(Object.entries(kafka.env).filter(([name]) => process.env[name] === undefined)),
    KAFKA_BROKERS: kafka.brokers.join(','),
    CLICKHOUSE_URL: clickhouse.url,
    CLICKHOUSE_USER: clickhouse.username,
    CLICKHOUSE_PASSWORD: clickhouse.password,
  })
  return {
    source: `Kafka: ${kafka.source} (${kafka.brokers.join(',')}); ClickHouse: ${clickhouse.source} (${clickhouse.url})`,
    enginePid: clickhouse.pid,
    stop: async () => {
      await clickhouse.stop()
      await kafka.stop()
    },
  }
}
