import type { MiddlewareHandler } from 'hono'
import { routePath } from 'hono/route'
import type { Metrics } from '../../shared/metrics.ts'

export function httpMetrics(metrics: Metrics): MiddlewareHandler {
  return async (c, next) => {
    const end = metrics.httpDuration.startTimer()
    await next()
    const route = routePath(c)
    end({ method: c.req.method, route })
    metrics.httpRequests.inc({ method: c.req.method, route, status: String(c.res.status) })
  }
}
