import { randomBytes } from 'node:crypto'
import type { Hono } from 'hono'
import { DAY_MS } from '../../../pipelines/exports/export-kinds.ts'
import { exportRefreshJob, exportSweepJob, logExportJob } from '../../../pipelines/exports/export-jobs.ts'
import { parseRefreshTime } from '../../../pipelines/exports/refresh-schedule.ts'
import { linkKeyFromAdminToken } from '../../../pipelines/exports/signed-links.ts'
import type { ScheduledJob } from '../../../pipelines/control/jobs.ts'
import type { Runtime } from '../../runtime.ts'
import type { EdgeEnv } from '../env.ts'
import { adminExportRoutes } from '../routes/admin-exports.ts'
import { exportFileRoutes } from '../routes/export-files.ts'
import { exportRoutes } from '../routes/exports.ts'
import { FreshFiles } from './fresh-files.ts'

/**
 * The export area assembled from the runtime: the API, the file links, the admin routes (the
 * edge), and the scheduled jobs (scheduler and control applier). processes.ts registers them.
 */

/** The HMAC key of export links: from the admin token, so every edge of a deployment signs alike. */
function linkKey(runtime: Runtime, adminToken: string | undefined): Buffer {
  if (adminToken) return linkKeyFromAdminToken(adminToken)
  runtime.logger.warn('no admin token: export links are valid only on the edge that signed them')
  return randomBytes(32)
}

export function exportEdgeRouters(runtime: Runtime, adminToken: string | undefined): Hono<EdgeEnv>[] {
  const { config, bus, store, files, control, logger, topology } = runtime
  const key = linkKey(runtime, adminToken)
  const topic = topology.topics.exports.topic
  const api = exportRoutes({
    store,
    control,
    files: new FreshFiles({ bus, store, topic, waitMs: config.SLUICE_EXPORT_WAIT_MS }),
    linkKey: key,
    settings: {
      perKeyPerMinute: config.SLUICE_EXPORT_RATE_PER_KEY_PER_MIN,
      linkTtlSeconds: config.SLUICE_EXPORT_LINK_TTL_SECONDS,
      idleMs: config.SLUICE_EXPORT_IDLE_DAYS * DAY_MS,
      logGraceMs: config.SLUICE_EXPORT_LOG_GRACE_MINUTES * 60_000,
      logRetentionMs: config.SLUICE_EXPORT_LOG_RETENTION_DAYS * DAY_MS,
      publicUrl: config.SLUICE_PUBLIC_URL,
    },
  })
  const links = exportFileRoutes({ store, files, linkKey: key, logger })
  const admin = adminExportRoutes({
    store,
    bus,
    control,
    commands: runtime.commands,
    adminToken,
    topic,
    caps: {
      audiences: config.SLUICE_EXPORT_AUDIENCE_CAP,
      audiencesRemarketing: config.SLUICE_EXPORT_AUDIENCE_CAP_REMARKETING,
      profiles: config.SLUICE_EXPORT_PROFILE_CAP,
    },
    idleMs: config.SLUICE_EXPORT_IDLE_DAYS * DAY_MS,
  })
  return [api, links, admin]
}

export function exportJobs(runtime: Runtime): ScheduledJob[] {
  const { config, bus, topology } = runtime
  const refreshTime = parseRefreshTime(config.SLUICE_EXPORT_REFRESH_TIME, config.SLUICE_EXPORT_REFRESH_ZONE)
  if (!refreshTime) throw new Error('SLUICE_EXPORT_REFRESH_TIME / SLUICE_EXPORT_REFRESH_ZONE are invalid')
  const deps = {
    bus,
    topic: topology.topics.exports.topic,
    refreshTime,
    idleMs: config.SLUICE_EXPORT_IDLE_DAYS * DAY_MS,
    logGraceMs: config.SLUICE_EXPORT_LOG_GRACE_MINUTES * 60_000,
  }
  return [exportRefreshJob(deps), logExportJob(deps), exportSweepJob(deps)]
}
