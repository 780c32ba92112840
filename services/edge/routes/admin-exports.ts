import { Hono } from 'hono'
import type { Bus } from '../../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import type { ExportJobRow } from '../../../pipelines/exports/export-commands.ts'
import { JOB_TYPES_OF, type ExportCaps } from '../../../pipelines/exports/export-kinds.ts'
import {
  lastRequests,
  latestFiles,
  readJob,
  readJobsOfOrg,
} from '../../../pipelines/exports/export-records.ts'
import { liveAudienceIds } from '../../../pipelines/exports/export-sources.ts'
import { idleDeadline, stateAt } from '../../../pipelines/exports/export-state.ts'
import { encodeExportRequest } from '../../../pipelines/exports/generation-requests.ts'
import { orgIdParam } from '../../../schemas/admin.ts'
import { enableExportBody, exportPlanBody, refreshExportBody } from '../../../schemas/exports.ts'
import type { CommandSender } from '../../control/command-client.ts'
import type { ControlStore } from '../../control/control-store.ts'
import { badRequest, conflict, notFound, SluiceError } from '../../shared/errors.ts'
import type { EdgeEnv } from '../env.ts'
import { adminAuth } from '../middleware/admin-auth.ts'
import { jsonBody, parseParam } from '../validate.ts'
import { asControlAnswer } from '../../control/control-errors.ts'
import { newCommand, type ControlCommand } from '../../control/control-plane.ts'

export interface AdminExportDeps {
  store: Store
  bus: Bus
  control: ControlStore
  commands: CommandSender
  adminToken: string | undefined
  /** The exports topic. */
  topic: string
  caps: ExportCaps
  idleMs: number
}

/**
 * The dashboard's side of exports (admin API, bearer token): enable and disable audience,
 * profile and log exports per org, the org's export plan, and a refresh on demand. Enabling and
 * disabling are control commands (ids, caps and uniqueness decided by the one applier).
 */
export function adminExportRoutes(deps: AdminExportDeps) {
  const app = new Hono<EdgeEnv>()
  const auth = adminAuth(deps.adminToken)

  const requireOrg = async (raw: string | undefined) => {
    const orgId = parseParam(orgIdParam, raw, 'org_id')
    if (!(await deps.control.getOrg(orgId))) throw notFound(`org ${orgId} not found`)
    return orgId
  }
  const exportOf = async (orgId: number, raw: string | undefined) => {
    const id = parseParam(orgIdParam, raw, 'export_id')
    const job = await readJob(deps.store, id)
    if (!job || job.org_id !== orgId) throw notFound(`export ${id} not found`)
    return job
  }

  app.post('/admin/v1/orgs/:org_id/exports', auth, async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const body = await jsonBody(c, enableExportBody)
    const result = await submit(deps.commands, 'enable-export', {
      org_id: orgId,
      source_type: body.source_type,
      source_id: body.source_id,
      job_types: body.job_types ?? [...JOB_TYPES_OF[body.source_type]],
      ...(body.name !== undefined && { name: body.name }),
      caps: {
        audiences: deps.caps.audiences,
        audiences_remarketing: deps.caps.audiencesRemarketing,
        profiles: deps.caps.profiles,
      },
    })
    return c.json(await describe(result as ExportJobRow[]), 201)
  })

  app.get('/admin/v1/orgs/:org_id/exports', auth, async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    return c.json(await describe(await readJobsOfOrg(deps.store, orgId)))
  })

  app.get('/admin/v1/orgs/:org_id/exports/:export_id', auth, async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const [job] = await describe([await exportOf(orgId, c.req.param('export_id'))])
    return c.json(job)
  })

  app.delete('/admin/v1/orgs/:org_id/exports/:export_id', auth, async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const job = await exportOf(orgId, c.req.param('export_id'))
    await submit(deps.commands, 'disable-export', { org_id: orgId, export_id: job.id })
    return c.body(null, 204)
  })

  // Writes the file now (for a log export: the hour given), whatever the schedule.
  app.post('/admin/v1/orgs/:org_id/exports/:export_id/refresh', auth, async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const job = await exportOf(orgId, c.req.param('export_id'))
    const body = await jsonBody(c, refreshExportBody)
    if (job.enabled !== 1) throw conflict(`export ${job.id} is disabled; enable it first`)
    const hour = body.hour === undefined ? undefined : Date.parse(`${body.hour}:00:00Z`)
    if (job.source_type === 'logs' && (hour === undefined || Number.isNaN(hour)))
      throw badRequest('hour (YYYY-MM-DDTHH, UTC) is required to refresh a log export')
    await deps.bus.produce(deps.topic, [
      encodeExportRequest({
        v: 1,
        kind: 'generate',
        export_id: job.id,
        ...(job.source_type === 'logs' && hour !== undefined ? { hour } : {}),
        reason: 'admin',
        requested_at: Date.now(),
      }),
    ])
    return c.json({ id: job.id, enqueued: true }, 202)
  })

  app.put('/admin/v1/orgs/:org_id/export-plan', auth, async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const body = await jsonBody(c, exportPlanBody)
    return c.json(await submit(deps.commands, 'set-export-plan', { org_id: orgId, plan: body.plan }))
  })

  /** Jobs as the admin API shows them: state and latest file added, times as ISO strings. */
  const describe = async (jobs: ExportJobRow[]) => {
    const ids = jobs.map((j) => j.id)
    const [files, requests, audiences] = await Promise.all([
      latestFiles(deps.store, ids),
      lastRequests(deps.store, ids),
      liveAudienceIds(
        deps.store,
        jobs.filter((j) => j.source_type === 'audiences').map((j) => Number(j.source_id)),
      ),
    ])
    const now = Date.now()
    return jobs.map((job) => {
      const facts = {
        enabled: job.enabled === 1,
        enabledAt: job.enabled_at,
        lastRequestedAt: requests.get(job.id),
        sourceExists: job.source_type !== 'audiences' || audiences.has(Number(job.source_id)),
      }
      const file = files.get(job.id)
      return {
        id: job.id,
        org_id: job.org_id,
        source_type: job.source_type,
        source_id: job.source_id,
        job_type: job.job_type,
        name: job.name,
        app_id: job.app_id,
        state: stateAt(facts, now, deps.idleMs),
        enabled_at: iso(job.enabled_at),
        disabled_at: job.disabled_at === null ? null : iso(job.disabled_at),
        last_requested_at: facts.lastRequestedAt === undefined ? null : iso(facts.lastRequestedAt),
        unavailable_after: job.enabled === 1 ? iso(idleDeadline(facts, deps.idleMs)) : null,
        latest_file: file
          ? {
              file_key: file.file_key,
              rows: file.rows,
              bytes: file.bytes,
              generated_at: iso(file.generated_at),
              expire_at: iso(file.expire_at),
            }
          : null,
      }
    })
  }

  return app
}

const iso = (ms: number) => new Date(ms).toISOString()

/** A control command's answer body; a refusal or no answer in time as the admin API's errors. */
async function submit<K extends 'enable-export' | 'disable-export' | 'set-export-plan'>(
  commands: CommandSender,
  kind: K,
  payload: Parameters<typeof newCommand<K>>[1],
): Promise<unknown> {
  let result
  try {
    result = await commands.submit(newCommand(kind, payload, Date.now()) as ControlCommand)
  } catch (err) {
    throw asControlAnswer(err)
  }
  if (result.status >= 400) {
    const error = (result.body as { error?: unknown } | null)?.error
    const message = typeof error === 'string' ? error : `export command answered ${result.status}`
    throw new SluiceError(result.status === 404 ? 'not_found' : 'control_refused', result.status, message)
  }
  return result.body
}
