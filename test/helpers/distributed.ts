import { GenericContainer, Wait, getContainerRuntimeClient, type StartedTestContainer } from 'testcontainers'
import { kafkaForTests } from './kafka-mock.ts'
import { clickhouseForTests } from './clickhouse-standin.ts'

export interface DistributedServices {
  /** `env`: settings a Sluice on this Kafka needs (MOCK_KAFKA_ENV on librdkafka's mock). */
  kafka: { brokers: string[]; source: string; env: Record<string, string> }
  clickhouse: { url: string; username: string; password: string; source: string }
  stop(): Promise<void>
}

async function dockerAnswers(): Promise<boolean> {
  try {
    await getContainerRuntimeClient()
    return true
  } catch {
    return false
  }
}

/**
 * The services the distributed-mode tests run against, in the order DESIGN.md gives:
 * KAFKA_BROKERS / CLICKHOUSE_URL when set; testcontainers when a Docker engine answers; otherwise
 * the local stand-ins (librdkafka's mock cluster via kcat, and the chdb-backed ClickHouse-HTTP port).
 */
export async function startDistributedServices(): Promise<DistributedServices> {
  const containers: StartedTestContainer[] = []
  const stops: (() => Promise<void>)[] = []
  const docker = !process.env.KAFKA_BROKERS || !process.env.CLICKHOUSE_URL ? await dockerAnswers() : false

  let kafka: DistributedServices['kafka']
  if (!process.env.KAFKA_BROKERS && docker) {
    const container = await new GenericContainer('apache/kafka:3.9.1')
      .withExposedPorts({ container: 9092, host: 39092 })
      .withEnvironment({
        KAFKA_NODE_ID: '1',
        KAFKA_PROCESS_ROLES: 'broker,controller',
        KAFKA_LISTENERS: 'PLAINTEXT://:9092,CONTROLLER://:9093',
        KAFKA_ADVERTISED_LISTENERS: 'PLAINTEXT://127.0.0.1:39092',
        KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
        KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
        KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
        KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      })
      .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
      .start()
    containers.push(container)
    kafka = { brokers: ['127.0.0.1:39092'], source: 'testcontainers (apache/kafka)', env: {} }
  } else {
    const k = await kafkaForTests()
    stops.push(() => k.stop())
    kafka = { brokers: k.brokers, source: k.source, env: k.env }
  }

  let clickhouse: DistributedServices['clickhouse']
  if (!process.env.CLICKHOUSE_URL && docker) {
    const container = await new GenericContainer('clickhouse/clickhouse-server:25.8')
      .withExposedPorts(8123)
      .withEnvironment({
        CLICKHOUSE_USER: 'sluice',
        CLICKHOUSE_PASSWORD: 'sluice',
        CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT: '1',
      })
      .withWaitStrategy(Wait.forHttp('/ping', 8123))
      .start()
    containers.push(container)
    clickhouse = {
      url: `http://${container.getHost()}:${container.getMappedPort(8123)}`,
      username: 'sluice',
      password: 'sluice',
      source: 'testcontainers (clickhouse/clickhouse-server)',
    }
  } else {
    const c = await clickhouseForTests()
    stops.push(() => c.stop())
    clickhouse = { url: c.url, username: c.username, password: c.password, source: c.source }
  }

  return {
    kafka,
    clickhouse,
    async stop() {
      for (const stop of stops) await stop()
      for (const container of containers) await container.stop()
    },
  }
}
