import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runPushTransportScenario } from './push-transports-scenario.ts'

describe(
  'push transport configuration, distributed mode (Kafka + ClickHouse over HTTP)',
  { timeout: 120_000 },
  () => {
    let sluice: InProcessSluice
    beforeAll(async () => {
      sluice = await startInProcess(distributedEnv('pushtransports'))
    })
    afterAll(() => sluice.close())

    it('runs on the Kafka bus and the ClickHouse store', () => {
      expect(sluice.running.runtime.mode).toBe('distributed')
    })

    it('sets, lists (masked) and removes transports, and resolves them to working transports', async () => {
      await runPushTransportScenario(sluice, sluice.running.runtime.store, 'dist')
    })
  },
)
