import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runExportScenario } from './exports-scenario.ts'

describe('exports, embedded mode (local log + chdb)', { timeout: 180_000 }, () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess({
      SLUICE_EXPORT_PROFILE_CAP: '2',
      SLUICE_EXPORT_RATE_PER_KEY_PER_MIN: '60',
      SLUICE_EXPORT_SETTLE_MS: '300',
    })
  })
  afterAll(() => sluice.close())

  it('serves every export kind, row for row what was uploaded', async () => {
    await runExportScenario(sluice, sluice.running.runtime.store, 'emb')
  })
})
