import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runImportScenario } from './imports-scenario.ts'

describe('imports, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess()
  })
  afterAll(() => sluice.close())

  it('imports profiles and audiences, once each, refusing bad bodies whole', async () => {
    await runImportScenario(sluice, sluice.running.runtime.store, 'emb')
  })
})
