import type { MiddlewareHandler } from 'hono'
import { routePath } from 'hono/route'
import type { CounterChild, HistogramChild } from '../../shared/hot-metrics.ts'
import type { Metrics } from '../../shared/metrics.ts'

/**
 * Requests and their latency by method, route pattern and status (HttpRequestMetrics), for every
 * request Hono dispatches.
 */
export function httpMetrics(requests: HttpRequestMetrics): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now()
    await next()
    requests.record(c.req.method, routePath(c), c.res.status, (performance.now() - started) / 1000)
  }
}

/**
 * The request counter and latency histogram. The labelled children are kept per label set (route
 * patterns, methods and statuses are few), found by route, method and status without building a
 * string per request, and updated at the cost of a few additions (hot-metrics.ts).
 */
export class HttpRequestMetrics {
  private readonly metrics: Metrics
  private readonly byRoute = new Map<string, Map<string, RouteMetrics>>()

  constructor(metrics: Metrics) {
    this.metrics = metrics
  }

  record(method: string, route: string, statusCode: number, seconds: number): void {
    let byMethod = this.byRoute.get(route)
    if (!byMethod) this.byRoute.set(route, (byMethod = new Map<string, RouteMetrics>()))
    let routeMetrics = byMethod.get(method)
    if (!routeMetrics)
      byMethod.set(
        method,
        (routeMetrics = {
          duration: this.metrics.httpDuration.child({ method, route }),
          counts: new Map(),
        }),
      )
    routeMetrics.duration.observe(seconds)
    let count = routeMetrics.counts.get(statusCode)
    if (!count)
      routeMetrics.counts.set(
        statusCode,
        (count = this.metrics.httpRequests.child({ method, route, status: String(statusCode) })),
      )
    count.inc()
  }
}

interface RouteMetrics {
  duration: HistogramChild
  counts: Map<number, CounterChild>
}
