import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { EXECUTION_ENV, runExecutionScenario } from './campaigns-execution-scenario.ts'
import { runInappScenario } from './campaigns-inapp-scenario.ts'
import { runCampaignCrudScenario } from './campaigns-scenario.ts'

// Kafka and ClickHouse as the global setup picked them (a broker, testcontainers, or the stand-ins).
describe('campaigns, distributed mode (Kafka + ClickHouse over HTTP)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess({ ...distributedEnv('campaigns'), ...EXECUTION_ENV })
  })
  afterAll(() => sluice.close())

  it('runs on the Kafka bus and the ClickHouse store', () => {
    expect(sluice.running.runtime.mode).toBe('distributed')
  })

  it('creates, reads, updates, archives, lists, searches and deletes push campaigns', async () => {
    await runCampaignCrudScenario(sluice, 'dist')
  })

  it('creates and updates in-app campaigns with checked files, and offers them to installs through the SDK', async () => {
    await runInappScenario(sluice, 'dist')
  })

  it(
    'runs push campaigns: schedules, A/B and control, exactly once, conversions, local time, throttling',
    { timeout: 240_000 },
    async () => {
      await runExecutionScenario(sluice, sluice.running.runtime.store, 'dist')
    },
  )
})
