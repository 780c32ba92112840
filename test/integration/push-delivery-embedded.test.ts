import { afterAll, beforeAll, describe, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import {
  runPushDeliveryScenario,
  startDeliveryStandins,
  type DeliveryStandins,
} from './push-delivery-scenario.ts'

describe(
  'push delivered through configured APNs and FCM transports, embedded mode',
  { timeout: 120_000 },
  () => {
    let standins: DeliveryStandins
    let sluice: InProcessSluice
    beforeAll(async () => {
      standins = await startDeliveryStandins()
      sluice = await startInProcess(standins.env)
    })
    afterAll(async () => {
      await sluice?.close()
      await standins?.close()
    })

    it('sends to APNs and FCM, records outcomes, and never targets a dead token again', async () => {
      await runPushDeliveryScenario(sluice, sluice.running.runtime.store, standins, 'emb')
    })
  },
)
