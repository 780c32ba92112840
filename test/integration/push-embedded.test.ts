import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { PUSH_SCENARIO_ENV, runPushScenario } from './push-scenario.ts'

describe('push endpoint, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess(PUSH_SCENARIO_ENV)
  })
  afterAll(() => sluice.close())

  it('serves the whole push contract', { timeout: 180_000 }, async () => {
    await runPushScenario(sluice, sluice.running.runtime.store, 'emb')
  })
})
