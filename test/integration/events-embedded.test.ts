import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import {
  runEdgeRefusals,
  runIngestionScenario,
  runOriginalClientPaths,
  runReceiptStages,
  runUuidSpellings,
} from './events-scenario.ts'

describe('event ingestion, embedded mode (local log + chdb)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess()
  })
  afterAll(() => sluice.close())

  it('stores exactly the valid, attributed events and reports an exact receipt', async () => {
    await runIngestionScenario(sluice, sluice.running.runtime.store, 'emb')
  })

  it('stores an event once however its uuid is spelled (issue 18)', async () => {
    await runUuidSpellings(sluice, sluice.running.runtime.store, 'emb')
  })

  it('takes uploads on the paths and schema versions clients of the original service use', async () => {
    await runOriginalClientPaths(sluice, sluice.running.runtime.store, 'emb')
  })

  it('says in the receipt when each stage was done with an upload', async () => {
    await runReceiptStages(sluice, sluice.running.runtime.store, 'emb')
  })

  it('refuses what a 202 cannot promise, and keeps serving', async () => {
    const tenant = await sluice.tenant('refusals', ['refusals-app'])
    await runEdgeRefusals(sluice, tenant.auth)
  })
})
