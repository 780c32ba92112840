import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, it } from 'vitest'
import { CAMPAIGN_CRASH_ENV, runCampaignCrashScenario } from '../helpers/campaign-crash.ts'
import { createTenant, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'

const TOKEN = 'campaign-crash-admin-token-123'
const APP = 'crash-campaigns'

// One embedded process (edge, worker, scheduler on the local log and chdb), killed whole and
// started again on the same data directory; the scenario is test/helpers/campaign-crash.ts.
describe('kill -9 of the embedded process while campaigns are planned and sent', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  let sluice: SluiceChild | undefined
  let client: ClickHouseClient | undefined
  beforeAll(async () => {
    dir = await tempDir('campaign-crash')
  })
  afterAll(async () => {
    await client?.close()
    await sluice?.stop()
    await dir.cleanup()
  })

  it('sends every member exactly one push or holds it out, none twice', { timeout: 600_000 }, async () => {
    const env = { ...CAMPAIGN_CRASH_ENV, SLUICE_DATA_DIR: dir.path, SLUICE_ADMIN_TOKEN: TOKEN }
    // The SQL port answers the queries; it moves to a new port with each start.
    const start = async () => {
      // A start recovers the local log and the engine's parts: slow on a loaded machine.
      sluice = await startSluice(env, ['start'], 120_000)
      client = createClient({ url: sluice.sqlUrl!, username: 'admin', password: TOKEN })
    }
    await start()
    const { auth, orgId } = await createTenant(sluice!.url, TOKEN, APP)
    await runCampaignCrashScenario({
      url: sluice!.url,
      auth,
      orgId,
      app: APP,
      sql: async <T>(query: string) =>
        await (await client!.query({ query, format: 'JSONEachRow' })).json<T>(),
      crash: async () => {
        await client!.close()
        client = undefined
        await sluice!.kill9()
      },
      restart: start,
      dataDir: dir.path,
    })
  })
})
