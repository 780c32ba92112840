import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { AUDIENCE_TEST_ENV, runAudienceScenario } from './audiences-scenario.ts'

describe('audience API, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess(AUDIENCE_TEST_ENV)
  })
  afterAll(() => sluice.close())

  // Seventeen audiences, each created, counted and read back, plus scheduled refreshes: 35-50 s on 2
  // busy cores, too close to the suite's 60 s default.
  it('serves the whole audience contract', { timeout: 180_000 }, async () => {
    await runAudienceScenario(sluice, sluice.running.runtime.store, 'emb')
  })
})
