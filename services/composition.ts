import type { Hono } from 'hono'
import type { EdgeEnv } from './edge/env.ts'
import type { ReadinessCheck } from './edge/routes/health.ts'
import type { Runtime } from './runtime.ts'
import type { ScheduledJob } from './scheduler/scheduler.ts'
import type { WorkerPipeline } from './worker/worker.ts'

/**
 * The one place that lists what each process runs: the edge's API areas, the worker's pipelines
 * and the scheduler's jobs. Every area issue adds its pieces here.
 */
export function edgeAreas(_runtime: Runtime): Hono<EdgeEnv>[] {
  return []
}

export function workerPipelines(): WorkerPipeline[] {
  return []
}

export function scheduledJobs(): ScheduledJob[] {
  return []
}

export function readinessChecks(runtime: Runtime): ReadinessCheck[] {
  return [{ name: 'store', check: () => runtime.store.ping() }]
}
