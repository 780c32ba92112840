import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { EXECUTION_ENV, runExecutionScenario } from './campaigns-execution-scenario.ts'
import { runInappScenario } from './campaigns-inapp-scenario.ts'
import { runCampaignCrudScenario } from './campaigns-scenario.ts'

describe('campaigns, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess(EXECUTION_ENV)
  })
  afterAll(() => sluice.close())

  it('creates, reads, updates, archives, lists, searches and deletes push campaigns', async () => {
    await runCampaignCrudScenario(sluice, 'emb')
  })

  it('creates and updates in-app campaigns with checked files, and offers them to installs through the SDK', async () => {
    await runInappScenario(sluice, 'emb')
  })

  it(
    'runs push campaigns: schedules, A/B and control, exactly once, conversions, local time, throttling',
    { timeout: 240_000 },
    async () => {
      await runExecutionScenario(sluice, sluice.running.runtime.store, 'emb')
    },
  )
})
