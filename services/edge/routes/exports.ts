import { Hono, type Context } from 'hono'
import { systemClock, type Clock } from '../../../pipelines/clock.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { readAudienceRows } from '../../../pipelines/audiences/audience-reader.ts'
import type { ExportJobRow } from '../../../pipelines/exports/export-commands.ts'
import { HOUR_MS, LIST_SOURCE_TYPE, type SourceType } from '../../../pipelines/exports/export-kinds.ts'
import {
  parseIdentifierType,
  parseLogHour,
  parsePositiveId,
  parseProfileJobType,
  type Parsed,
} from '../../../pipelines/exports/export-params.ts'
import {
  findJob,
  lastRequests,
  latestFiles,
  readJobsOfOrg,
  recordRequest,
  type ExportFileRow,
} from '../../../pipelines/exports/export-records.ts'
import { idleDeadline, stateAt } from '../../../pipelines/exports/export-state.ts'
import { exportTarget } from '../../../pipelines/exports/export-targets.ts'
import { hourComplete } from '../../../pipelines/exports/refresh-schedule.ts'
import { signLink } from '../../../pipelines/exports/signed-links.ts'
import type { ControlStore } from '../../control/control-store.ts'
import { forbidden, notFound, SluiceError } from '../../shared/errors.ts'
import type { EdgeEnv } from '../env.ts'
import type { FreshFiles } from '../exports/fresh-files.ts'
import { apiAuth } from '../middleware/api-auth.ts'
import { rateLimit, TokenBuckets } from '../middleware/rate-limit.ts'

export interface ExportRouteDeps {
  store: Store
  control: ControlStore
  files: FreshFiles
  linkKey: Buffer
  settings: {
    perKeyPerMinute: number
    linkTtlSeconds: number
    idleMs: number
    logGraceMs: number
    logRetentionMs: number
    /** Base of the links handed out; undefined: a path, resolved by the client against its request. */
    publicUrl: string | undefined
  }
  clock?: Clock
}

type Ctx = Context<EdgeEnv>

/**
 * The export API (spec "Data Exports"): lists of audience and profile exports, and the three
 * kinds of export, each answered with a 302 to a signed, expiring link to its file (served by
 * files.ts). Basic auth with the `exports` scope (credentials in the URL's user information
 * arrive the same way), 50 requests per minute per key. Another org's audience, profile db or
 * app is 403; an unknown one, a malformed path, an export not enabled or not available is 404.
 */
export function exportRoutes(deps: ExportRouteDeps) {
  const app = new Hono<EdgeEnv>()
  const clock = deps.clock ?? systemClock
  const { settings } = deps
  const perKey = new TokenBuckets(settings.perKeyPerMinute, 60_000)
  const guard = [
    apiAuth(deps.control, 'exports'),
    rateLimit(
      perKey,
      (c) => c.get('principal').apiKey,
      `rate limit of ${settings.perKeyPerMinute} export requests per minute for this API key exceeded; retry later`,
    ),
  ] as const

  const orgOf = (c: Ctx) => c.get('principal').orgId
  const must = <T>(parsed: Parsed<T>): T => {
    if (!parsed.ok) throw notFound(parsed.reason)
    return parsed.value
  }

  /** The job if it is enabled and available for this org, else 404. Records the request. */
  const availableJob = async (
    c: Ctx,
    sourceType: SourceType,
    sourceId: string,
    jobType: string,
    sourceExists = true,
  ): Promise<ExportJobRow> => {
    const job = await findJob(deps.store, sourceType, sourceId, jobType)
    const label =
      sourceType === 'logs'
        ? `log exports of app ${sourceId}`
        : `${jobType} export of ${sourceType} ${sourceId}`
    if (!job || job.org_id !== orgOf(c) || job.enabled !== 1) throw notFound(`${label} is not enabled`)
    const now = clock.now()
    const requested = (await lastRequests(deps.store, [job.id])).get(job.id)
    const facts = { enabled: true, enabledAt: job.enabled_at, lastRequestedAt: requested, sourceExists }
    if (stateAt(facts, now, settings.idleMs) !== 'available')
      throw notFound(
        `${label} is unavailable (not requested for too long, or its source is gone); enable it again`,
      )
    await recordRequest(deps.store, job.id, now)
    return job
  }

  const redirect = (c: Ctx, file: ExportFileRow) => {
    const expires = Math.floor(
      Math.min(clock.now() + settings.linkTtlSeconds * 1000, Math.max(file.expire_at, clock.now())) / 1000,
    )
    const link = signLink(deps.linkKey, file.path, expires)
    c.header('Cache-Control', 'no-store')
    return c.redirect(`${settings.publicUrl ?? ''}${link}`, 302)
  }

  app.get('/v1/exports/audiences', ...guard, async (c) => c.json(await list(c, 'audiences')))
  app.get('/v1/exports/profiles', ...guard, async (c) => c.json(await list(c, 'profiles')))

  app.get('/v1/exports/audiences/:audience_id/:identifier_type', ...guard, async (c) => {
    const audienceId = must(parsePositiveId(c.req.param('audience_id'), 'audience_id'))
    const jobType = must(parseIdentifierType(c.req.param('identifier_type')))
    const [audience] = await readAudienceRows(deps.store, [audienceId])
    if (!audience) throw notFound(`audience ${audienceId} not found`)
    if (audience.org_id !== orgOf(c))
      throw forbidden(`audience ${audienceId} belongs to another organization`)
    const job = await availableJob(c, 'audiences', String(audienceId), jobType, audience.deleted_at === null)
    const target = await exportTarget(deps.store, job)
    if (!target) throw notFound(`audience ${audienceId} cannot be exported`)
    return redirect(c, await deps.files.get(target))
  })

  app.get('/v1/exports/profiles/:profiledb_id/:job_type', ...guard, async (c) => {
    const dbId = must(parsePositiveId(c.req.param('profiledb_id'), 'profiledb_id'))
    const jobType = must(parseProfileJobType(c.req.param('job_type')))
    const db = await deps.control.getProfileDb(dbId)
    if (!db) throw notFound(`profile db ${dbId} not found`)
    if (db.org_id !== orgOf(c)) throw forbidden(`profile db ${dbId} belongs to another organization`)
    const job = await availableJob(c, 'profiles', String(dbId), jobType)
    const target = await exportTarget(deps.store, job)
    if (!target) throw notFound(`profile db ${dbId} cannot be exported`)
    return redirect(c, await deps.files.get(target))
  })

  app.get('/v1/exports/analytics/logs/:app_uuid/:year/:month/:day/:hour', ...guard, async (c) => {
    const appId = c.req.param('app_uuid')
    const hour = must(
      parseLogHour(c.req.param('year'), c.req.param('month'), c.req.param('day'), c.req.param('hour')),
    )
    const found = await deps.control.getApp(appId)
    if (!found) throw notFound(`app ${appId} not found`)
    if (found.org_id !== orgOf(c)) throw forbidden(`app ${appId} belongs to another organization`)
    const job = await availableJob(c, 'logs', appId, 'logs')
    const now = clock.now()
    if (!hourComplete(hour, now, settings.logGraceMs)) {
      const ready = Math.ceil((hour + HOUR_MS + settings.logGraceMs - now) / 1000)
      throw new SluiceError(
        'not_found',
        404,
        'this hour is not complete yet: its log file is written once the hour and a grace for late SDK rows have passed',
        { headers: { 'Retry-After': String(Math.max(1, Math.min(ready, 3600))) } },
      )
    }
    if (hour + HOUR_MS + settings.logRetentionMs < now)
      throw notFound('log files are kept 30 days; this hour is older')
    const target = await exportTarget(deps.store, job, { hour })
    if (!target) throw notFound('no log export for this hour')
    return redirect(c, await deps.files.get(target, hour))
  })

  /** The available exports of the caller's org, with their latest file. */
  const list = async (c: Ctx, sourceType: 'audiences' | 'profiles') => {
    const now = clock.now()
    const jobs = (await readJobsOfOrg(deps.store, orgOf(c), sourceType)).filter((j) => j.enabled === 1)
    const ids = jobs.map((j) => j.id)
    const [files, requests, audiences] = await Promise.all([
      latestFiles(deps.store, ids),
      lastRequests(deps.store, ids),
      sourceType === 'audiences'
        ? readAudienceRows(
            deps.store,
            jobs.map((j) => Number(j.source_id)),
          )
        : Promise.resolve([]),
    ])
    const liveAudiences = new Map(audiences.filter((a) => a.deleted_at === null).map((a) => [a.id, a]))
    const items = []
    for (const job of jobs) {
      const audience = liveAudiences.get(Number(job.source_id))
      const facts = {
        enabled: true,
        enabledAt: job.enabled_at,
        lastRequestedAt: requests.get(job.id),
        sourceExists: sourceType !== 'audiences' || audience !== undefined,
      }
      if (stateAt(facts, now, settings.idleMs) !== 'available') continue
      const file = files.get(job.id)
      items.push({
        id: job.id,
        name: audience?.name ?? job.name,
        source_type: LIST_SOURCE_TYPE[sourceType],
        source_id: job.source_id,
        job_type: job.job_type,
        ...(file && { results_generated_at: iso(file.generated_at) }),
        results_count: file?.rows ?? 0,
        results_expire_at: iso(file ? file.expire_at : idleDeadline(facts, settings.idleMs)),
        ...(facts.lastRequestedAt !== undefined && { last_requested_at: iso(facts.lastRequestedAt) }),
        size: file?.bytes ?? 0,
      })
    }
    return items
  }

  return app
}

const iso = (ms: number) => new Date(ms).toISOString()
