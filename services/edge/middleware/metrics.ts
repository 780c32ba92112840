import type { MiddlewareHandler } from 'hono'
import { routePath } from 'hono/route'
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
 * patterns, methods and statuses are few): prom-client hashes a label object on every inc/observe
 * otherwise, and startTimer allocates a closure and an hrtime pair.
 */
export class HttpRequestMetrics {
  private readonly metrics: Metrics
  private readonly durations = new Map<string, { observe(seconds: number): void }>()
  private readonly counts = new Map<string, { inc(): void }>()

  constructor(metrics: Metrics) {
    this.metrics = metrics
  }

  record(method: string, route: string, statusCode: number, seconds: number): void {
    const timed = `${method} ${route}`
    let duration = this.durations.get(timed)
    if (!duration) this.durations.set(timed, (duration = this.metrics.httpDuration.labels({ method, route })))
    duration.observe(seconds)
    const status = String(statusCode)
    const counted = `${timed} ${status}`
    let count = this.counts.get(counted)
    if (!count)
      this.counts.set(counted, (count = this.metrics.httpRequests.labels({ method, route, status })))
    count.inc()
  }
}
