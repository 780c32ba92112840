import { Hono } from 'hono'
import type { Metrics } from '../../shared/metrics.ts'

export interface ReadinessCheck {
  name: string
  check: () => Promise<boolean>
}

/** Liveness, readiness (every dependency answers) and Prometheus metrics. */
export function healthRoutes(metrics: Metrics, checks: readonly ReadinessCheck[], isDraining: () => boolean) {
  const app = new Hono()
  app.get('/healthz', (c) => c.json({ status: 'ok' }))
  app.get('/readyz', async (c) => {
    const results: Record<string, boolean> = {}
    await Promise.all(
      checks.map(async ({ name, check }) => {
        results[name] = await check().catch(() => false)
      }),
    )
    const ready = !isDraining() && Object.values(results).every(Boolean)
    return c.json(
      { status: ready ? 'ready' : 'not ready', draining: isDraining(), checks: results },
      ready ? 200 : 503,
    )
  })
  app.get('/metrics', async (c) => {
    c.header('Content-Type', metrics.registry.contentType)
    return c.body(await metrics.registry.metrics())
  })
  return app
}
