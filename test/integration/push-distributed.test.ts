import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { PUSH_SCENARIO_ENV, runPushScenario } from './push-scenario.ts'

// Kafka and ClickHouse as the global setup picked them (a broker, testcontainers, or the stand-ins).
describe('push endpoint, distributed mode (Kafka + ClickHouse over HTTP)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess({ ...distributedEnv('push'), ...PUSH_SCENARIO_ENV })
  })
  afterAll(() => sluice.close())

  it('runs on the Kafka bus and the ClickHouse store', () => {
    expect(sluice.running.runtime.mode).toBe('distributed')
  })

  it('serves the whole push contract', { timeout: 180_000 }, async () => {
    await runPushScenario(sluice, sluice.running.runtime.store, 'dist')
  })
})
