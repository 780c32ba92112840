import { Hono, type Context } from 'hono'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import type { AudienceRecord } from '../../../pipelines/audiences/audience-commands.ts'
import { parseAudienceBody } from '../../../pipelines/audiences/audience-body.ts'
import type { CountQuery } from '../../../pipelines/audiences/audience-counter.ts'
import { compileCounts } from '../../../pipelines/audiences/compile-rules.ts'
import { parseTargetRules } from '../../../schemas/audiences.ts'
import {
  listLiveAudiences,
  readCounts,
  readLiveAudience,
  type AudienceCounts,
} from '../../../pipelines/audiences/audience-reader.ts'
import {
  audienceBody,
  detailBody,
  listItem,
  segmentationBody,
} from '../../../pipelines/audiences/audience-views.ts'
import type { RuleIssue } from '../../../schemas/audiences.ts'
import type { ConcurrencyLimit } from '../../shared/concurrency-limit.ts'
import { AudienceControl } from '../../control/audience-control.ts'
import type { App, ControlStore } from '../../control/control-store.ts'
import type { CommandSender } from '../../control/command-client.ts'
import { badRequest, forbidden, notFound, SluiceError } from '../../shared/errors.ts'
import type { Logger } from '../../shared/logger.ts'
import type { CountRequester } from '../audiences/count-requests.ts'
import type { EdgeEnv } from '../env.ts'
import { apiAuth } from '../middleware/api-auth.ts'
import { readBoundedBody } from '../read-body.ts'
import { parseJsonBody, requireJsonContentType } from '../json-request.ts'
import { controlWrite } from '../../control/control-errors.ts'

export interface AudienceRouteDeps {
  store: Store
  control: ControlStore
  commands: CommandSender
  counts: CountRequester
  logger: Logger
  /**
   * Where a preview's count runs (under the Query API's engine caps, off the pipelines'
   * connections), and how many at once on this edge; absent: no preview route.
   */
  preview?: { countQuery: CountQuery; turns: ConcurrencyLimit }
  /** Largest request body (default 1 MB). */
  maxBodyBytes?: number
}

type Ctx = Context<EdgeEnv>

const BASE = '/api/v6/orgs/:org_id/apps/:app_id/audiences'
const MAX_BODY_BYTES = 1024 * 1024
const POSITIVE_INT = /^[1-9][0-9]{0,15}$/

/**
 * Audiences (docs/audiences.md): `POST|GET …/audiences`, `GET|PUT|PATCH|DELETE …/audiences/:id`,
 * `GET|POST …/audiences/:id/segmentation`, under `/api/v6/orgs/:org_id/apps/:app_id`, for keys with
 * the `campaigns` scope. An org other than the key's, or an app of another org: 403; an audience
 * that is unknown, deleted, or of another app: 404, never its contents. Writes are control
 * commands; counts are computed by the audience counter, which create, update and recompute wait
 * for (bounded by SLUICE_AUDIENCE_COUNT_WAIT_MS).
 */
export function audienceRoutes(deps: AudienceRouteDeps) {
  const app = new Hono<EdgeEnv>()
  const audiences = new AudienceControl(deps.commands)
  const maxBodyBytes = deps.maxBodyBytes ?? MAX_BODY_BYTES
  const auth = apiAuth(deps.control, 'campaigns')

  /** The org and app of the path, checked against the key: 403 for anything not the key's. */
  const scope = async (c: Ctx): Promise<{ orgId: number; app: App }> => {
    const raw = c.req.param('org_id') ?? ''
    if (!POSITIVE_INT.test(raw)) throw badRequest(`invalid org_id: ${JSON.stringify(raw)}`)
    const orgId = Number(raw)
    if (orgId !== c.get('principal').orgId)
      throw forbidden(`org ${orgId} is not the organization of this API key`)
    const appId = c.req.param('app_id') ?? ''
    // An unknown app answers like another org's: a key never learns which app keys exist.
    const found = await deps.control.getApp(appId)
    if (!found || found.org_id !== orgId) throw forbidden(`app ${appId} does not belong to this organization`)
    return { orgId, app: found }
  }

  const audienceIdOf = (c: Ctx): number => {
    const raw = c.req.param('id') ?? ''
    // Not an id any audience can have: answered like an unknown one.
    if (!POSITIVE_INT.test(raw)) throw notFound(`audience ${raw.slice(0, 64)} not found`)
    return Number(raw)
  }

  const liveAudience = async (c: Ctx) => {
    const { orgId, app: target } = await scope(c)
    const id = audienceIdOf(c)
    const row = await readLiveAudience(deps.store, orgId, target.app_id, id)
    if (!row) throw notFound(`audience ${id} not found`)
    return { orgId, target, row }
  }

  const readBody = async (c: Ctx, mode: 'create' | 'replace' | 'change') => {
    requireJsonContentType(c.req.header('Content-Type'))
    const body = parseJsonBody(await readBoundedBody(c.req.raw, maxBodyBytes))
    const parsed = parseAudienceBody(body, mode)
    if (!parsed.ok) throw invalid(parsed.status, parsed.issues)
    return parsed
  }

  /**
   * Asks for the counts of an audience just written and waits for them (bounded): a failure to ask
   * is logged, not answered, since the write is done; the scheduled refresh counts it later.
   */
  const countAfterWrite = async (record: AudienceRecord, reason: 'create' | 'update') => {
    try {
      const at = await deps.counts.request({
        audience_id: record.id,
        org_id: record.org_id,
        app_id: record.app_id,
        reason,
      })
      return await deps.counts.waitFor(record.id, at, record.version)
    } catch (err) {
      deps.logger.warn(
        { err, audience_id: record.id },
        'could not have the audience counted; the refresh will',
      )
      return undefined
    }
  }

  app.post(BASE, auth, async (c) => {
    const { orgId, app: target } = await scope(c)
    const body = await readBody(c, 'create')
    const record = await controlWrite(() => audiences.create(orgId, target.app_id, body.name!, body.rules!))
    return c.json(audienceBody(record, await countAfterWrite(record, 'create')), 201)
  })

  // The counts of rules not saved yet (the dashboard's builder counts as rules change): computed
  // now, on this edge, by the same compiled query as the audience counter's; nothing is stored.
  const preview = deps.preview
  if (preview)
    app.post(`${BASE}/preview`, auth, async (c) => {
      const { orgId, app: target } = await scope(c)
      requireJsonContentType(c.req.header('Content-Type'))
      const body = parseJsonBody(await readBoundedBody(c.req.raw, maxBodyBytes))
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw invalid(400, [{ path: '', message: 'the body must be a JSON object' }])
      const given = (body as Record<string, unknown>).target_rules
      if (given === undefined)
        throw invalid(422, [{ path: 'target_rules', message: 'target_rules is required' }])
      const parsed = parseTargetRules(given)
      if (!parsed.ok) throw invalid(422, parsed.issues)
      const org = await deps.control.getOrg(orgId)
      const calculatedAt = Date.now()
      const { sql, params } = compileCounts(parsed.rules, {
        appId: target.app_id,
        appProfiledbId: target.profiledb_id,
        orgProfiledbId: org?.profiledb_id ?? 0,
        now: calculatedAt,
      })
      const counts = await preview.turns.run(c.req.raw.signal, () => preview.countQuery(sql, params))
      return c.json({ ...counts, calculated_at: new Date(calculatedAt).toISOString() })
    })

  app.get(BASE, auth, async (c) => {
    const { orgId, app: target } = await scope(c)
    const rows = await listLiveAudiences(deps.store, orgId, target.app_id)
    const counts = await readCounts(
      deps.store,
      rows.map((r) => r.id),
    )
    return c.json(rows.map((r) => listItem(r, counts.get(r.id))))
  })

  app.get(`${BASE}/:id`, auth, async (c) => {
    const { row } = await liveAudience(c)
    const counts = await readCounts(deps.store, [row.id])
    return c.json(detailBody(row, counts.get(row.id)))
  })

  const update = (mode: 'replace' | 'change') => async (c: Ctx) => {
    const { orgId, app: target } = await scope(c)
    const id = audienceIdOf(c)
    const body = await readBody(c, mode)
    const record = await controlWrite(() =>
      audiences.update(orgId, target.app_id, id, {
        ...(body.name !== undefined && { name: body.name }),
        ...(body.rules && { rules: body.rules }),
      }),
    )
    // A change of the name alone changes no count: the last ones stand.
    const counts = body.rules
      ? await countAfterWrite(record, 'update')
      : (await readCounts(deps.store, [id])).get(id)
    return c.json(audienceBody(record, counts), 200)
  }
  app.put(`${BASE}/:id`, auth, update('replace'))
  app.patch(`${BASE}/:id`, auth, update('change'))

  app.delete(`${BASE}/:id`, auth, async (c) => {
    const { orgId, app: target } = await scope(c)
    const id = audienceIdOf(c)
    await controlWrite(() => audiences.delete(orgId, target.app_id, id))
    return c.body(null, 204)
  })

  app.get(`${BASE}/:id/segmentation`, auth, async (c) => {
    const { row } = await liveAudience(c)
    const counts = await readCounts(deps.store, [row.id])
    return c.json(segmentationBody(row.id, counts.get(row.id)))
  })

  // Recompute now: 200 with the new counts, or 202 with the last ones when the counter has not
  // answered within the wait (the request stays queued and is computed).
  app.post(`${BASE}/:id/segmentation`, auth, async (c) => {
    const { orgId, target, row } = await liveAudience(c)
    let requestedAt: number
    try {
      requestedAt = await deps.counts.request({
        audience_id: row.id,
        org_id: orgId,
        app_id: target.app_id,
        reason: 'recompute',
      })
    } catch (err) {
      throw new SluiceError('bus_unavailable', 503, 'could not queue the computation; retry', {
        retriable: true,
        headers: { 'Retry-After': '1' },
        cause: err,
      })
    }
    const fresh = await deps.counts.waitFor(row.id, requestedAt)
    if (fresh) return c.json(segmentationBody(row.id, fresh), 200)
    const last: AudienceCounts | undefined = (await readCounts(deps.store, [row.id])).get(row.id)
    return c.json(segmentationBody(row.id, last), 202)
  })

  return app
}

/** 422 (or 400) naming every issue with its JSON path. */
function invalid(status: 400 | 422, issues: readonly RuleIssue[]): SluiceError {
  const messages = issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`))
  return new SluiceError(status === 422 ? 'unprocessable' : 'bad_request', status, messages.join('; '), {
    extra: { errors: messages, issues },
  })
}
