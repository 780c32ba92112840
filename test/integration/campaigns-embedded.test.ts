import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runInappScenario } from './campaigns-inapp-scenario.ts'
import { runCampaignCrudScenario } from './campaigns-scenario.ts'

describe('campaigns, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess()
  })
  afterAll(() => sluice.close())

  it('creates, reads, updates, archives, lists, searches and deletes push campaigns', async () => {
    await runCampaignCrudScenario(sluice, 'emb')
  })

  it('creates and updates in-app campaigns with checked files, and offers them to installs through the SDK', async () => {
    await runInappScenario(sluice, 'emb')
  })
})
