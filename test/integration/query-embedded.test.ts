import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runQueryScenario } from './query-scenario.ts'

describe('Query API, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess()
  })
  afterAll(() => sluice.close())

  it('answers the documented metrics, dimensions and conditions with the numbers of the posted events', async () => {
    await runQueryScenario(sluice, 'emb')
  })
})
