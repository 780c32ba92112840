import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runProfileScenario } from './profiles-scenario.ts'

// Kafka and ClickHouse as the global setup picked them (a broker, testcontainers, or the stand-ins).
describe('profile store, distributed mode (Kafka + ClickHouse over HTTP)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess({
      ...distributedEnv('profiles'),
      SLUICE_PROFILE_RATE_PER_CUSTOMER_PER_MIN: '1000',
    })
  })
  afterAll(() => sluice.close())

  it('runs on the Kafka bus and the ClickHouse store', () => {
    expect(sluice.running.runtime.mode).toBe('distributed')
  })

  it('serves the whole profile store contract', async () => {
    await runProfileScenario(sluice, sluice.running.runtime.store, 'dist')
  })
})
