import { Hono, type Context } from 'hono'
import type { Files } from '../../../pipelines/connectors/files/files.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { selectCampaigns } from '../../../pipelines/campaigns/campaign-list.ts'
import {
  readAppCampaigns,
  readCampaign,
  readDeliveryStats,
  readOccurrenceSummaries,
} from '../../../pipelines/campaigns/campaign-reader.ts'
import { renderCampaign } from '../../../pipelines/campaigns/render-campaign.ts'
import { readCampaignPerformance } from '../../../pipelines/campaigns/campaign-performance.ts'
import {
  savedAudiencesOf,
  validateInappCampaign,
  validatePushCampaign,
} from '../../../pipelines/campaigns/validate-campaign.ts'
import { parseTargetRules } from '../../../schemas/audiences.ts'
import {
  CAMPAIGN_LIMITS,
  listQuery,
  type Channel,
  type InappCampaignBody,
  type PushCampaignBody,
  type StoredAudiences,
} from '../../../schemas/campaigns.ts'
import type { App, ControlStore } from '../../control/control-store.ts'
import { CampaignControl, type CampaignScope } from '../../control/campaign-control.ts'
import type { CommandSender } from '../../control/command-client.ts'
import { badRequest, forbidden, notFound } from '../../shared/errors.ts'
import { unprocessable } from '../campaign-errors.ts'
import type { EdgeEnv } from '../env.ts'
import { apiAuth } from '../middleware/api-auth.ts'
import { readBoundedBody } from '../read-body.ts'
import { parseJsonBody } from '../json-request.ts'
import { formatIssues } from '../validate.ts'
import { readInappUpload, serveAsset, type InappUploadLimits } from './inapp-upload.ts'

export interface CampaignRouteDeps {
  store: Store
  control: ControlStore
  /** Where campaign writes go: the control plane's command sender. */
  commands: CommandSender
  files: Files
  inapp: InappUploadLimits
  now?: () => number
}

type Ctx = Context<EdgeEnv>

export const CAMPAIGNS_BASE = '/api/v6/orgs/:org_id/apps/:app_id'

/**
 * Campaign management (docs/campaigns.md) under /api/v6/orgs/:org_id/apps/:app_id, Basic auth
 * with the `campaigns` scope: push campaigns (JSON), in-app campaigns (multipart with creative
 * files), the list and search. Writes are control commands (ids from the single applier); reads
 * go to the store. Another org's org_id or app: 403; an unknown campaign (or one of the other
 * channel, or another app's): 404.
 */
export function campaignRoutes(deps: CampaignRouteDeps) {
  const app = new Hono<EdgeEnv>()
  const writes = new CampaignControl(deps.commands)
  const now = deps.now ?? Date.now

  const scopeOf = async (c: Ctx, channel: Channel): Promise<CampaignScope & { app: App }> => {
    const raw = c.req.param('org_id') ?? ''
    if (!/^\d{1,18}$/.test(raw) || Number(raw) <= 0)
      throw badRequest(`invalid org_id: ${JSON.stringify(raw)}`)
    const orgId = Number(raw)
    if (orgId !== c.get('principal').orgId)
      throw forbidden(`org ${orgId} is not the organization of this API key`)
    const appId = c.req.param('app_id') ?? ''
    const found = await deps.control.getApp(appId)
    // An unknown app answers like another org's: a key never learns which app keys exist.
    if (!found || found.org_id !== orgId) throw forbidden(`app ${appId} does not belong to this organization`)
    return { orgId, appId, channel, app: found }
  }

  const campaignId = (c: Ctx): number => {
    const raw = c.req.param('id') ?? ''
    if (!/^\d{1,18}$/.test(raw) || Number(raw) <= 0)
      throw badRequest(`invalid campaign_id: ${JSON.stringify(raw)}`)
    return Number(raw)
  }

  const stored = async (scope: CampaignScope, id: number) => {
    const row = await readCampaign(deps.store, scope.appId, id)
    if (!row || row.channel !== scope.channel) throw notFound(`campaign ${id} not found`)
    return row
  }

  /** Saved audiences named by a campaign must be this app's (migration 012's `audiences`), each of them. */
  const checkAudiences = async (scope: CampaignScope, audiences: StoredAudiences) => {
    const named = savedAudiencesOf(audiences)
    if (named.length === 0) return
    const rows = await deps.store.query<{ id: string | number }>(
      `SELECT id FROM audiences FINAL
       WHERE id IN {ids:Array(UInt64)} AND app_id = {app:String} AND org_id = {org:UInt64} AND deleted_at IS NULL`,
      { ids: named.map((n) => n.id), app: scope.appId, org: scope.orgId },
    )
    const live = new Set(rows.map((r) => Number(r.id)))
    const missing = named.filter((n) => !live.has(n.id))
    if (missing.length > 0)
      throw unprocessable(
        missing.map((n) => ({ path: n.path, message: `audience ${n.id} does not exist in this app` })),
      )
  }

  const pushBody = async (c: Ctx, scope: CampaignScope): Promise<PushCampaignBody> => {
    const raw = await readBoundedBody(c.req.raw, CAMPAIGN_LIMITS.maxBodyBytes)
    const input = parseJsonBody(raw)
    if (input === null || typeof input !== 'object' || Array.isArray(input))
      throw badRequest('request body must be a JSON object')
    const result = validatePushCampaign(input, parseTargetRules)
    if (!result.ok) throw unprocessable(result.issues)
    await checkAudiences(scope, result.body.audiences)
    return result.body
  }

  const inappBody = async (c: Ctx, scope: CampaignScope): Promise<InappCampaignBody> => {
    const upload = await readInappUpload(c.req.raw, deps.inapp)
    const result = validateInappCampaign(upload.data, parseTargetRules)
    if (!result.ok) throw unprocessable(result.issues)
    const assets = await upload.store(deps.files, scope.appId, result.body.creatives.length)
    await checkAudiences(scope, result.body.audiences)
    return { ...result.body, assets }
  }

  const guard = apiAuth(deps.control, 'campaigns')

  for (const channel of ['push', 'inapp'] as const) {
    const base = `${CAMPAIGNS_BASE}/${channel}/campaigns`
    const bodyOf = channel === 'push' ? pushBody : inappBody

    app.post(base, guard, async (c) => {
      const scope = await scopeOf(c, channel)
      const result = await writes.create(scope, await bodyOf(c, scope))
      return c.json(result.body as object, 201)
    })
    app.get(base, guard, async (c) => {
      const scope = await scopeOf(c, channel)
      return c.json(await list(c, scope.appId, false, channel))
    })
    app.get(`${base}/:id`, guard, async (c) => {
      const scope = await scopeOf(c, channel)
      return c.json(renderCampaign(await stored(scope, campaignId(c))))
    })
    app.put(`${base}/:id`, guard, async (c) => {
      const scope = await scopeOf(c, channel)
      const id = campaignId(c)
      await stored(scope, id)
      const result = await writes.update(scope, id, await bodyOf(c, scope))
      return c.json(result.body as object, 200)
    })
    app.put(`${base}/:id/archive`, guard, async (c) => {
      const scope = await scopeOf(c, channel)
      const result = await writes.archive(scope, campaignId(c))
      return c.json(result.body as object, 200)
    })
    app.delete(`${base}/:id`, guard, async (c) => {
      const scope = await scopeOf(c, channel)
      await writes.remove(scope, campaignId(c))
      return c.body(null, 204)
    })
    app.get(`${base}/:id/performance`, guard, async (c) => {
      const scope = await scopeOf(c, channel)
      const row = await stored(scope, campaignId(c))
      return c.json(await readCampaignPerformance(deps.store, row))
    })
  }

  // An in-app creative's file, by the name the campaign answers with.
  app.get(`${CAMPAIGNS_BASE}/inapp/campaigns/:id/files/:name`, guard, async (c) => {
    const scope = await scopeOf(c, 'inapp')
    const row = await stored(scope, campaignId(c))
    const body = JSON.parse(row.body) as InappCampaignBody
    const name = c.req.param('name')
    const asset = Object.values(body.assets)
      .flatMap((a) => [a.phone, a.tablet])
      .find((a) => a?.name === name)
    if (!asset) throw notFound(`campaign ${row.id} has no file ${name}`)
    return serveAsset(deps.files, asset)
  })

  const list = async (c: Ctx, appId: string, search: boolean, channel?: Channel) => {
    const parsed = listQuery(search).safeParse(c.req.query())
    if (!parsed.success) throw badRequest(formatIssues(parsed.error.issues))
    const query = parsed.data
    if (channel) query.channel = [channel === 'push' ? 'push' : 'in-app']
    const [rows, occurrences] = await Promise.all([
      readAppCampaigns(deps.store, appId),
      readOccurrenceSummaries(deps.store, appId),
    ])
    const stats = await readDeliveryStats(
      deps.store,
      appId,
      rows.filter((r) => r.channel === 'push').map((r) => r.id),
    )
    const { total, items } = selectCampaigns(rows, query, { now: now(), occurrences, stats })
    return { app_id: appId, records_count: items.length, total_records: total, campaigns: items }
  }

  app.get(`${CAMPAIGNS_BASE}/campaigns`, guard, async (c) => {
    const scope = await scopeOf(c, 'push')
    return c.json(await list(c, scope.appId, false))
  })
  app.get(`${CAMPAIGNS_BASE}/campaigns/search`, guard, async (c) => {
    const scope = await scopeOf(c, 'push')
    return c.json(await list(c, scope.appId, true))
  })

  return app
}
