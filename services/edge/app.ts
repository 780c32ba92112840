import { Hono } from 'hono'
import type { ControlStore } from '../control/control-store.ts'
import { dashboardRoutes } from '../dashboard/routes.ts'
import { notFound } from '../shared/errors.ts'
import type { Logger } from '../shared/logger.ts'
import type { Metrics } from '../shared/metrics.ts'
import type { EdgeEnv } from './env.ts'
import { apiAuth } from './middleware/api-auth.ts'
import { directDispatch, type DirectDispatch, type DirectRoute } from './direct-dispatch.ts'
import {
  AuthFailureLimit,
  authFailureLimit,
  type AuthFailureLimitOptions,
} from './middleware/auth-failure-limit.ts'
import { errorHandler, notFoundHandler } from './middleware/errors.ts'
import { HttpRequestMetrics, httpMetrics } from './middleware/metrics.ts'
import { httpsCheck, requireHttps, type RequireHttpsOptions } from './middleware/require-https.ts'
import { adminRoutes, type DeadLetterAdmin } from './routes/admin.ts'
import { apiReferenceRoutes } from './routes/api-reference.ts'
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
  /** Routes also served before Hono's dispatch (direct-dispatch.ts); each is in an area too. */
  directRoutes?: readonly DirectRoute[]
}

/** The edge: the Hono app, and the dispatch of its direct routes for the HTTP server (serve.ts). */
export interface Edge {
  app: Hono<EdgeEnv>
  direct: DirectDispatch | undefined
}

/**
 * Where the public APIs live (every base address the spec names). A path under one of them that no
 * route serves asks for credentials first, as /admin/v1 does: 401 without valid ones, then 404, so
 * a client without credentials learns nothing about which paths exist.
 */
const API_PREFIXES = ['/v0', '/v1', '/v2', '/events', '/api'] as const

/** The edge's Hono app alone (tests through app.request()). */
export function createEdgeApp(deps: EdgeDeps): Hono<EdgeEnv> {
  return createEdge(deps).app
}

/**
 * The edge: one Hono app serving every base address (profile, messaging, events, api), and the
 * same middleware's checks around the direct routes, sharing their state (the failure limit).
 */
export function createEdge(deps: EdgeDeps): Edge {
  const app = new Hono<EdgeEnv>()
  const requests = new HttpRequestMetrics(deps.metrics)
  const authFailures = deps.authFailureLimit ? new AuthFailureLimit(deps.authFailureLimit) : undefined
  app.use('*', httpMetrics(requests))
  if (deps.requireHttps) app.use('*', requireHttps(deps.requireHttps))
  if (authFailures) app.use('*', authFailureLimit(authFailures))
  app.route('/', healthRoutes(deps.metrics, deps.readiness, deps.isDraining))
  app.route('/admin/v1', adminRoutes(deps.control, deps.adminToken, deps.deadLetters))
  app.route('/', authCheckRoutes(deps.control))
  app.route('/', apiReferenceRoutes())
  // The dashboard calls the APIs through this very app, with the browser request's connection.
  app.route('/', dashboardRoutes({ dispatch: (request, env) => app.fetch(request, env), adminToken: deps.adminToken }))
  for (const area of deps.areas ?? []) app.route('/', area)
  // Registered last: reached only when no route above answered.
  for (const prefix of API_PREFIXES)
    app.all(`${prefix}/*`, apiAuth(deps.control), () => {
      throw notFound()
    })
  app.notFound(notFoundHandler)
  app.onError(errorHandler(deps.logger))
  const direct = directDispatch({
    routes: deps.directRoutes ?? [],
    control: deps.control,
    logger: deps.logger,
    requests,
    ...(deps.requireHttps && { https: httpsCheck(deps.requireHttps) }),
    ...(authFailures && { authFailures }),
  })
  return { app, direct }
}
