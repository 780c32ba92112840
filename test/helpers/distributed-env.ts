import { randomBytes } from 'node:crypto'
import { inject } from 'vitest'

/**
 * Environment for a Sluice in distributed mode against the run's Kafka and ClickHouse, with a
 * database and topic prefix of its own so test files never see each other's data.
 */
export interface DistributedEnv {
  KAFKA_BROKERS: string
  CLICKHOUSE_URL: string
  CLICKHOUSE_USER: string
  CLICKHOUSE_PASSWORD: string
  CLICKHOUSE_DATABASE: string
  SLUICE_TOPIC_PREFIX: string
  [name: string]: string
}

export function distributedEnv(name: string): DistributedEnv {
  const suffix = randomBytes(4).toString('hex')
  const clickhouse = inject('clickhouse')
  return {
    ...inject('kafkaEnv'),
    KAFKA_BROKERS: inject('kafkaBrokers'),
    CLICKHOUSE_URL: clickhouse.url,
    CLICKHOUSE_USER: clickhouse.username,
    CLICKHOUSE_PASSWORD: clickhouse.password,
    CLICKHOUSE_DATABASE: `sluice_${name}_${suffix}`,
    SLUICE_TOPIC_PREFIX: `sluice.${name}.${suffix}.`,
  }
}
