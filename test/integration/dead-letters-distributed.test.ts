import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runPoisonScenario } from './dead-letters-scenario.ts'

// Kafka (a broker, testcontainers, or librdkafka's mock cluster) and a ClickHouse server (or the
// chdb-backed stand-in), as the global setup picked and printed.
describe('failure routing, distributed mode (Kafka + ClickHouse over HTTP)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess(distributedEnv('deadletters'))
  })
  afterAll(() => sluice.close())

  it('dead-letters a poison record with its stage and error, moves the partition on, and replays it after a fix', async () => {
    expect(sluice.running.runtime.mode).toBe('distributed')
    await runPoisonScenario(sluice, 'dist')
  })
})
