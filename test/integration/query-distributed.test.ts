import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { runQueryScenario } from './query-scenario.ts'

// Kafka (a broker, testcontainers, or librdkafka's mock cluster) and a ClickHouse server (or the
// chdb-backed stand-in), as the global setup picked and printed.
describe('Query API, distributed mode (Kafka + ClickHouse over HTTP)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess(distributedEnv('query'))
  })
  afterAll(() => sluice.close())

  it('answers the same numbers as in embedded mode, through the server with per-query caps', async () => {
    expect(sluice.running.runtime.store.kind).toBe('clickhouse')
    await runQueryScenario(sluice, 'dist')
  })
})
