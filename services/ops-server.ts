import { Hono } from 'hono'
import { errorHandler, notFoundHandler } from './edge/middleware/errors.ts'
import { healthRoutes, type ReadinessCheck } from './edge/routes/health.ts'
import { listen, type HttpServer } from './edge/serve.ts'
import type { Logger } from './shared/logger.ts'
import type { Metrics } from './shared/metrics.ts'

export interface OpsServerOptions {
  host: string
  port: number
  metrics: Metrics
  logger: Logger
  readiness: readonly ReadinessCheck[]
  isDraining: () => boolean
}

/**
 * `/healthz`, `/readyz` and `/metrics` for a process that runs no edge (`sluice worker`, `sluice
 * scheduler`), so orchestrators can probe it and Prometheus can scrape its stage metrics. Plain
 * HTTP: it carries no credentials and nothing else.
 */
export function startOpsServer(options: OpsServerOptions): Promise<HttpServer> {
  const app = new Hono()
  app.route('/', healthRoutes(options.metrics, options.readiness, options.isDraining))
  app.notFound(notFoundHandler)
  app.onError(errorHandler(options.logger))
  return listen(app as never, options.host, options.port)
}
