import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { parse } from 'yaml'

interface Compose {
  services: Record<
    string,
    {
      image?: string
      command?: string[]
      environment?: Record<string, string>
      deploy?: { replicas?: number }
    }
  >
}

describe('docker-compose.yml', () => {
  it('parses and runs Kafka (KRaft), ClickHouse, 1 edge, 2 workers and 1 scheduler', async () => {
    const compose = parse(await readFile(new URL('../../docker-compose.yml', import.meta.url), 'utf8'), {
      merge: true,
    }) as Compose
    const services = compose.services
    expect(Object.keys(services).sort()).toEqual(['clickhouse', 'edge', 'kafka', 'scheduler', 'worker'])
    expect(services.kafka?.image).toMatch(/^apache\/kafka:/)
    expect(services.kafka?.environment?.KAFKA_PROCESS_ROLES).toBe('broker,controller')
    expect(services.clickhouse?.image).toMatch(/^clickhouse\/clickhouse-server:/)
    expect(services.edge?.command).toEqual(['edge'])
    expect(services.worker?.command).toEqual(['worker'])
    expect(services.worker?.deploy?.replicas).toBe(2)
    expect(services.scheduler?.command).toEqual(['scheduler'])
    for (const role of ['edge', 'worker', 'scheduler']) {
      expect(services[role]?.environment?.KAFKA_BROKERS).toBe('kafka:9092')
      expect(services[role]?.environment?.CLICKHOUSE_URL).toBe('http://clickhouse:8123')
    }
  })
})
