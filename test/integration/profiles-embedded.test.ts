import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runProfileScenario } from './profiles-scenario.ts'

describe('profile store, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    // Raised so the 100 parallel increments on one customer are not refused by the 15/min limit.
    sluice = await startInProcess({ SLUICE_PROFILE_RATE_PER_CUSTOMER_PER_MIN: '1000' })
  })
  afterAll(() => sluice.close())

  it('serves the whole profile store contract', async () => {
    await runProfileScenario(sluice, sluice.running.runtime.store, 'emb')
  })
})
