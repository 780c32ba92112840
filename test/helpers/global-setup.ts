import type { TestProject } from 'vitest/node'
import { startDistributedServices } from './distributed.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string
    /** Settings a Sluice on the run's Kafka is started with (MOCK_KAFKA_ENV on the mock cluster). */
    kafkaEnv: Record<string, string>
    clickhouse: { url: string; username: string; password: string }
  }
}

/**
 * Embedded-mode tests need nothing; the distributed-mode services are started once for the run
 * and handed to the test files (each file uses its own topics and database).
 */
export default async function setup(project: TestProject) {
  const services = await startDistributedServices()
  project.provide('kafkaBrokers', services.kafka.brokers.join(','))
  project.provide('kafkaEnv', services.kafka.env)
  project.provide('clickhouse', {
    url: services.clickhouse.url,
    username: services.clickhouse.username,
    password: services.clickhouse.password,
  })
  process.stdout.write(
    `test harness: embedded mode (local log + chdb) always; distributed mode on Kafka from ${services.kafka.source} ` +
      `(${services.kafka.brokers.join(',')}) and ClickHouse from ${services.clickhouse.source} (${services.clickhouse.url})\n`,
  )
  return () => services.stop()
}
