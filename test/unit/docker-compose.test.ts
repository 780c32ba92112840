import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
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
      healthcheck?: { test?: string[] }
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

  it("probes each Sluice role's readiness with Node itself, and the probe tells ready from not", async () => {
    const compose = parse(await readFile(new URL('../../docker-compose.yml', import.meta.url), 'utf8'), {
      merge: true,
    }) as Compose
    const ports: Record<string, string> = { edge: '8080', worker: '9464', scheduler: '9464' }
    const server = createServer((req, res) => {
      res.statusCode = req.url === '/readyz' ? 200 : 503
      res.end()
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const port = (server.address() as AddressInfo).port
    try {
      for (const [role, rolePort] of Object.entries(ports)) {
        const test = compose.services[role]?.healthcheck?.test ?? []
        expect(test.slice(0, 3)).toEqual(['CMD', 'node', '-e'])
        expect(test[4]).toBe(`http://127.0.0.1:${rolePort}/readyz`)
        // The same probe against a stand-in server: ready answers 0, not ready 1, nothing 1.
        // (A child of its own: this process must stay free to answer it.)
        const probe = (url: string) =>
          new Promise<number | null>((resolve) =>
            spawn(process.execPath, ['-e', test[3]!, url]).on('exit', (code) => resolve(code)),
          )
        expect(await probe(`http://127.0.0.1:${port}/readyz`)).toBe(0)
        expect(await probe(`http://127.0.0.1:${port}/other`)).toBe(1)
      }
    } finally {
      server.close()
    }
  })
})
