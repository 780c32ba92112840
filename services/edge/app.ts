import { Hono } from 'hono'
import type { ControlStore } from '../../pipelines/control/control-store.ts'
import type { Logger } from '../shared/logger.ts'
import type { Metrics } from '../shared/metrics.ts'
import type { EdgeEnv } from './env.ts'
import { errorHandler, notFoundHandler } from './middleware/errors.ts'
import { httpMetrics } from './middleware/metrics.ts'
import { adminRoutes } from './routes/admin.ts'
import { authCheckRoutes } from './routes/auth-check.ts'
import { healthRoutes, type ReadinessCheck } from './routes/health.ts'

export interface EdgeDeps {
  control: ControlStore
  logger: Logger
  metrics: Metrics
  adminToken: string | undefined
  readiness: readonly ReadinessCheck[]
  isDraining: () => boolean
  /** Routers of the API areas (events, profiles, ...), mounted at the root. */
  areas?: readonly Hono<EdgeEnv>[]
}

/** The edge: one Hono app serving every base address (profile, messaging, events, api). */
export function createEdgeApp(deps: EdgeDeps) {
  const app = new Hono<EdgeEnv>()
  app.use('*', httpMetrics(deps.metrics))
  app.route('/', healthRoutes(deps.metrics, deps.readiness, deps.isDraining))
  app.route('/admin/v1', adminRoutes(deps.control, deps.adminToken))
  app.route('/', authCheckRoutes(deps.control))
  for (const area of deps.areas ?? []) app.route('/', area)
  app.notFound(notFoundHandler)
  app.onError(errorHandler(deps.logger))
  return app
}
