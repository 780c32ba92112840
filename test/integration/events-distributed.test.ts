import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import {
  runEdgeRefusals,
  runIngestionScenario,
  runOriginalClientPaths,
  runReceiptStages,
  runUuidSpellings,
} from './events-scenario.ts'

// Kafka (a broker, testcontainers, or librdkafka's mock cluster) and a ClickHouse server (or the
// chdb-backed stand-in), as the global setup picked and printed.
describe('event ingestion, distributed mode (Kafka + ClickHouse over HTTP)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess(distributedEnv('events'))
  })
  afterAll(() => sluice.close())

  it('runs on the Kafka bus and the ClickHouse store', () => {
    expect(sluice.running.runtime.mode).toBe('distributed')
    expect(sluice.running.runtime.bus.kind).toBe('kafka')
    expect(sluice.running.runtime.store.kind).toBe('clickhouse')
  })

  it('stores exactly the valid, attributed events and reports an exact receipt', async () => {
    await runIngestionScenario(sluice, sluice.running.runtime.store, 'dist')
  })

  it('stores an event once however its uuid is spelled (issue 18)', async () => {
    await runUuidSpellings(sluice, sluice.running.runtime.store, 'dist')
  })

  it('takes uploads on the paths and schema versions clients of the original service use', async () => {
    await runOriginalClientPaths(sluice, sluice.running.runtime.store, 'dist')
  })

  it('says in the receipt when each stage was done with an upload', async () => {
    await runReceiptStages(sluice, sluice.running.runtime.store, 'dist')
  })

  it('refuses what a 202 cannot promise, and keeps serving', async () => {
    const tenant = await sluice.tenant('refusals', ['refusals-app'])
    await runEdgeRefusals(sluice, tenant.auth)
  })
})
