import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { AUDIENCE_TEST_ENV, runAudienceScenario } from './audiences-scenario.ts'

// Kafka and ClickHouse as the global setup picked them (a broker, testcontainers, or the stand-ins).
describe('audience API, distributed mode (Kafka + ClickHouse over HTTP)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess({ ...distributedEnv('audiences'), ...AUDIENCE_TEST_ENV })
  })
  afterAll(() => sluice.close())

  it('runs on the Kafka bus and the ClickHouse store', () => {
    expect(sluice.running.runtime.mode).toBe('distributed')
  })

  // Seventeen audiences, each created, counted and read back, plus scheduled refreshes: 35-50 s on 2
  // busy cores, too close to the suite's 60 s default.
  it('serves the whole audience contract', { timeout: 180_000 }, async () => {
    await runAudienceScenario(sluice, sluice.running.runtime.store, 'dist')
  })
})
