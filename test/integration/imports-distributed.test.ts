import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runImportScenario } from './imports-scenario.ts'

// Kafka and ClickHouse as the global setup picked them (a broker, testcontainers, or the stand-ins).
describe('imports, distributed mode (Kafka + ClickHouse over HTTP)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess(distributedEnv('imports'))
  })
  afterAll(() => sluice.close())

  it('runs on the Kafka bus and the ClickHouse store', () => {
    expect(sluice.running.runtime.mode).toBe('distributed')
  })

  it('imports profiles and audiences, once each, refusing bad bodies whole', async () => {
    await runImportScenario(sluice, sluice.running.runtime.store, 'dist')
  })
})
