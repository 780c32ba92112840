import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { ControlStore } from '../../pipelines/control/control-store.ts'
import { createEdgeApp } from '../../services/edge/app.ts'
import { createLogger } from '../../services/shared/logger.ts'
import { createMetrics } from '../../services/shared/metrics.ts'
import { tempDir } from './temp.ts'

export const ADMIN_TOKEN = 'test-admin-token-0123456789'

/** An edge app over a fresh chdb store, for tests that go through app.request(). */
export async function edgeOverChdb(options: { keyCacheMs?: number } = {}) {
  const dir = await tempDir('edge')
  const store = await ChdbStore.open(dir.path)
  await migrate(store)
  const control = new ControlStore(store, options.keyCacheMs ?? 0)
  const app = createEdgeApp({
    control,
    logger: createLogger('silent'),
    metrics: createMetrics(),
    adminToken: ADMIN_TOKEN,
    readiness: [{ name: 'store', check: () => store.ping() }],
    isDraining: () => false,
  })
  return {
    app,
    store,
    control,
    async close() {
      await store.close()
      await dir.cleanup()
    },
  }
}

export const adminHeaders = { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' }

export const basic = (key: string, secret: string) => ({
  Authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`,
})
