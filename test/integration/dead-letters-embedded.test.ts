import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runPoisonScenario } from './dead-letters-scenario.ts'

describe('failure routing, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess()
  })
  afterAll(() => sluice.close())

  it('dead-letters a poison record with its stage and error, moves the partition on, and replays it after a fix', async () => {
    await runPoisonScenario(sluice, 'emb')
  })
})
