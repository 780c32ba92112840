import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runExportScenario } from './exports-scenario.ts'

// Kafka and ClickHouse as the global setup picked them (a broker, testcontainers, or the stand-ins).
describe('exports, distributed mode (Kafka + ClickHouse over HTTP)', { timeout: 240_000 }, () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess({
      ...distributedEnv('exports'),
      SLUICE_EXPORT_PROFILE_CAP: '2',
      SLUICE_EXPORT_RATE_PER_KEY_PER_MIN: '60',
      SLUICE_EXPORT_SETTLE_MS: '300',
    })
  })
  afterAll(() => sluice.close())

  it('runs on the Kafka bus and the ClickHouse store', () => {
    expect(sluice.running.runtime.mode).toBe('distributed')
  })

  it('serves every export kind, row for row what was uploaded', async () => {
    await runExportScenario(sluice, sluice.running.runtime.store, 'dist')
  })
})
