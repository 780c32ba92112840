import type { MiddlewareHandler } from 'hono'
import { routePath } from 'hono/route'
import type { Metrics } from '../../shared/metrics.ts'

/**
 * Requests and their latency by method, route pattern and status. The labelled children are kept
 * per label set (route patterns, methods and statuses are few): prom-client hashes a label object
 * on every inc/observe otherwise, and startTimer allocates a closure and an hrtime pair.
 */
export function httpMetrics(metrics: Metrics): MiddlewareHandler {
  const durations = new Map<string, { observe(seconds: number): void }>()
  const counts = new Map<string, { inc(): void }>()
  return async (c, next) => {
    const started = performance.now()
    await next()
    const method = c.req.method
    const route = routePath(c)
    const status = String(c.res.status)
    const timed = `${method} ${route}`
    let duration = durations.get(timed)
    if (!duration) durations.set(timed, (duration = metrics.httpDuration.labels({ method, route })))
    duration.observe((performance.now() - started) / 1000)
    const counted = `${timed} ${status}`
    let count = counts.get(counted)
    if (!count) counts.set(counted, (count = metrics.httpRequests.labels({ method, route, status })))
    count.inc()
  }
}
