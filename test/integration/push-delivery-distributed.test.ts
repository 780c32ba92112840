import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import {
  runPushDeliveryScenario,
  startDeliveryStandins,
  type DeliveryStandins,
} from './push-delivery-scenario.ts'

describe(
  'push delivered through configured APNs and FCM transports, distributed mode',
  { timeout: 120_000 },
  () => {
    let standins: DeliveryStandins
    let sluice: InProcessSluice
    beforeAll(async () => {
      standins = await startDeliveryStandins()
      sluice = await startInProcess({ ...distributedEnv('pushdelivery'), ...standins.env })
    })
    afterAll(async () => {
      await sluice?.close()
      await standins?.close()
    })

    it('sends to APNs and FCM, records outcomes, and never targets a dead token again', async () => {
      expect(sluice.running.runtime.mode).toBe('distributed')
      await runPushDeliveryScenario(sluice, sluice.running.runtime.store, standins, 'dist')
    })
  },
)
