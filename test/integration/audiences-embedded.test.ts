import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { AUDIENCE_TEST_ENV, runAudienceScenario } from './audiences-scenario.ts'

describe('audience API, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess(AUDIENCE_TEST_ENV)
  })
  afterAll(() => sluice.close())

  it('serves the whole audience contract', async () => {
    await runAudienceScenario(sluice, sluice.running.runtime.store, 'emb')
  })
})
