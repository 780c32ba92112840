import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { CAMPAIGN_CRASH_ENV, runCampaignCrashScenario } from '../helpers/campaign-crash.ts'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { createTenant, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'

const TOKEN = 'campaign-crash-dist-admin-token-123'
const APP = 'crash-campaigns-dist'

// Real processes, as in production: `sluice edge`, `sluice scheduler` and `sluice worker` on
// Kafka (or librdkafka's mock cluster) and ClickHouse (or the chdb-backed stand-in). The worker,
// which runs the campaign executor and the push pipeline, is killed mid-plan and mid-send and a
// new one takes over its consumer groups; the scenario is test/helpers/campaign-crash.ts.
describe('kill -9 of the worker in distributed mode while campaigns are planned and sent', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  const children: SluiceChild[] = []
  let client: ClickHouseClient | undefined
  beforeAll(async () => {
    dir = await tempDir('campaign-crash-dist')
  })
  afterAll(async () => {
    await client?.close()
    for (const child of children) await child.stop().catch(() => undefined)
    await dir.cleanup()
  })

  it('sends every member exactly one push or holds it out, none twice', { timeout: 480_000 }, async () => {
    const env = {
      ...distributedEnv('campaigncrash'),
      ...CAMPAIGN_CRASH_ENV,
      SLUICE_DATA_DIR: dir.path,
      SLUICE_ADMIN_TOKEN: TOKEN,
      // The dead worker's partitions go to the new one once its session times out.
      KAFKA_SESSION_TIMEOUT_MS: '6000',
    }
    const edge = await startSluice(env, ['edge'], 60_000)
    children.push(edge, await startSluice(env, ['scheduler'], 60_000))
    let worker = await startSluice(env, ['worker'], 60_000)
    children.push(worker)
    client = createClient({
      url: env.CLICKHOUSE_URL,
      username: env.CLICKHOUSE_USER,
      password: env.CLICKHOUSE_PASSWORD,
      database: env.CLICKHOUSE_DATABASE,
    })
    const { auth, orgId } = await createTenant(edge.url, TOKEN, APP)
    await runCampaignCrashScenario({
      url: edge.url,
      auth,
      orgId,
      app: APP,
      sql: async <T>(query: string) =>
        await (await client!.query({ query, format: 'JSONEachRow' })).json<T>(),
      crash: () => worker.kill9(),
      restart: async () => {
        worker = await startSluice(env, ['worker'], 60_000)
        children.push(worker)
      },
      dataDir: dir.path,
    })
  })
})
