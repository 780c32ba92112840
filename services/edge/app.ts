import { Hono } from 'hono'
import type { ControlStore } from '../control/control-store.ts'
import { notFound } from '../shared/errors.ts'
import type { Logger } from '../shared/logger.ts'
import type { Metrics } from '../shared/metrics.ts'
import type { EdgeEnv } from './env.ts'
import { apiAuth } from './middleware/api-auth.ts'
import { authFailureLimit, type AuthFailureLimitOptions } from './middleware/auth-failure-limit.ts'
import { errorHandler, notFoundHandler } from './middleware/errors.ts'
import { httpMetrics } from './middleware/metrics.ts'
import { requireHttps, type RequireHttpsOptions } from './middleware/require-https.ts'
import { adminRoutes, type DeadLetterAdmin } from './routes/admin.ts'
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
  /** The dead-letter store and the bus, for /admin/v1/dead-letters; absent: those routes 404. */
  deadLetters?: DeadLetterAdmin
  /** The per-address limit on failed authentications; absent: no limit. */
  authFailureLimit?: AuthFailureLimitOptions
  /** Who may use plain HTTP (loopback always); absent: anyone, as in tests through app.request(). */
  requireHttps?: RequireHttpsOptions
}

/**
 * Where the public APIs live (every base address the spec names). A path under one of them that no
 * route serves asks for credentials first, as /admin/v1 does: 401 without valid ones, then 404, so
 * a client without credentials learns nothing about which paths exist.
 */
const API_PREFIXES = ['/v0', '/v1', '/v2', '/events', '/api'] as const

/** The edge: one Hono app serving every base address (profile, messaging, events, api). */
export function createEdgeApp(deps: EdgeDeps) {
  const app = new Hono<EdgeEnv>()
  app.use('*', httpMetrics(deps.metrics))
  if (deps.requireHttps) app.use('*', requireHttps(deps.requireHttps))
  if (deps.authFailureLimit) app.use('*', authFailureLimit(deps.authFailureLimit))
  app.route('/', healthRoutes(deps.metrics, deps.readiness, deps.isDraining))
  app.route('/admin/v1', adminRoutes(deps.control, deps.adminToken, deps.deadLetters))
  app.route('/', authCheckRoutes(deps.control))
  for (const area of deps.areas ?? []) app.route('/', area)
  // Registered last: reached only when no route above answered.
  for (const prefix of API_PREFIXES)
    app.all(`${prefix}/*`, apiAuth(deps.control), () => {
      throw notFound()
    })
  app.notFound(notFoundHandler)
  app.onError(errorHandler(deps.logger))
  return app
}
