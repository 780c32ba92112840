import { join } from 'node:path'
import { LocalLog } from '../../pipelines/connectors/bus/local-log/local-log.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { createEdgeApp } from '../../services/edge/app.ts'
import { createLogger } from '../../services/shared/logger.ts'
import { createMetrics } from '../../services/shared/metrics.ts'
import { controlPlaneOver } from './control.ts'
import { tempDir } from './temp.ts'

export const ADMIN_TOKEN = 'test-admin-token-0123456789'

/**
 * An edge app over a fresh chdb store, for tests that go through app.request(). Admin writes go
 * through the control plane as in embedded mode: commands on a local log, applied by the applier.
 */
export async function edgeOverChdb(options: { keyCacheMs?: number } = {}) {
  const dir = await tempDir('edge')
  const store = await ChdbStore.open(join(dir.path, 'clickhouse'))
  await migrate(store)
  const bus = LocalLog.open({ path: join(dir.path, 'log'), partitions: 1 })
  const plane = await controlPlaneOver(store, bus, { keyCacheMs: options.keyCacheMs ?? 0 })
  const control = plane.control
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
      await plane.stop()
      await bus.close()
      await store.close()
      await dir.cleanup()
    },
  }
}

export const adminHeaders = { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' }

export const basic = (key: string, secret: string) => ({
  Authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`,
})
