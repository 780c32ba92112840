import { randomBytes } from 'node:crypto'
import type { Hono } from 'hono'
import { LoadShedder } from './edge/uploads/load-shedder.ts'
import { ingestionGroups, ingestionTopics } from '../pipelines/events/topics.ts'
import { transactionKey } from './edge/uploads/transaction-id.ts'
import { heartbeatJob } from '../pipelines/control/jobs.ts'
import { profileTopics } from '../pipelines/profiles/commands.ts'
import type { EdgeEnv } from './edge/env.ts'
import type { ReadinessCheck } from './edge/routes/health.ts'
import { profileRoutes } from './edge/routes/profiles.ts'
import { uploadRoutes } from './edge/routes/uploads.ts'
import type { Runtime } from './runtime.ts'
import type { ScheduledJob } from './scheduler/scheduler.ts'
import { controlPipeline } from './worker/control.ts'
import { ingestionPipeline } from './worker/ingestion.ts'
import { profilesPipeline } from './worker/profiles.ts'
import type { WorkerPipeline } from './worker/worker.ts'

/**
 * The one place that lists what each process runs: the edge's API areas, the worker's pipelines
 * and the scheduler's jobs. Every area adds its pieces here.
 */
export interface EdgeAreas {
  routers: Hono<EdgeEnv>[]
  start(): void
  stop(): void
}

export function edgeAreas(runtime: Runtime, secrets: { adminToken: string | undefined }): EdgeAreas {
  const { config, bus, store, control, metrics, logger } = runtime
  const topics = ingestionTopics(config.SLUICE_TOPIC_PREFIX)
  const groups = ingestionGroups(config.SLUICE_TOPIC_PREFIX)
  if (!secrets.adminToken)
    logger.warn('no admin token: upload transaction ids can only be looked up on the edge that issued them')
  const shedder = new LoadShedder({
    bus,
    watched: [
      { group: groups.uploads, topic: topics.uploads },
      { group: groups.sdkUploads, topic: topics.sdkUploads },
      { group: groups.events, topic: topics.events },
    ],
    // Records: whole bodies on the upload topics, blocks of up to 5,000 events on the events topic.
    maxLag: config.SLUICE_MAX_BUS_LAG,
    maxInFlightBytes: 256 * 1024 * 1024,
    onSample: (topic, lag) => metrics.busLag.set({ topic }, lag),
  })
  const uploads = uploadRoutes({
    bus,
    store,
    control,
    topics,
    shedder,
    metrics,
    transactionKey: secrets.adminToken ? transactionKey(secrets.adminToken) : randomBytes(32),
    limits: {
      maxBytes: config.SLUICE_UPLOAD_MAX_BYTES,
      maxInflatedBytes: config.SLUICE_UPLOAD_MAX_DECOMPRESSED_BYTES,
      ratePerKeyPerSecond: config.SLUICE_UPLOAD_RATE_PER_KEY,
      sdkRatePerAppPerSecond: config.SLUICE_SDK_UPLOAD_RATE_PER_APP,
    },
  })
  const profiles = profileRoutes({
    bus,
    store,
    control,
    topic: profileTopics(config.SLUICE_TOPIC_PREFIX).changes,
    metrics,
    limits: {
      perKeyPerMinute: config.SLUICE_PROFILE_RATE_PER_KEY_PER_MIN,
      perCustomerPerMinute: config.SLUICE_PROFILE_RATE_PER_CUSTOMER_PER_MIN,
    },
  })
  return { routers: [uploads, profiles], start: () => shedder.start(), stop: () => shedder.stop() }
}

export function workerPipelines(): WorkerPipeline[] {
  // The control applier runs the jobs the scheduler emits, so both take the same list.
  return [ingestionPipeline, profilesPipeline, controlPipeline(scheduledJobs())]
}

export function scheduledJobs(): ScheduledJob[] {
  return [heartbeatJob]
}

export function readinessChecks(runtime: Runtime): ReadinessCheck[] {
  return [{ name: 'store', check: () => runtime.store.ping() }]
}
