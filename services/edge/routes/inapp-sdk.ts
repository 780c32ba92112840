import { Hono } from 'hono'
import type { Files } from '../../../pipelines/connectors/files/files.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import type { CampaignRow } from '../../../pipelines/campaigns/campaign-commands.ts'
import { readAppCampaigns } from '../../../pipelines/campaigns/campaign-reader.ts'
import { inappOffers, liveInappCampaigns } from '../../../pipelines/campaigns/inapp-offers.ts'
import type { StoredAsset } from '../../../schemas/campaigns.ts'
import type { ControlStore } from '../../control/control-store.ts'
import { TtlCache } from '../../control/ttl-cache.ts'
import { badRequest, notFound, SluiceError } from '../../shared/errors.ts'
import type { EdgeEnv } from '../env.ts'
import { rateLimit, TokenBuckets } from '../middleware/rate-limit.ts'
import { serveAsset } from './inapp-upload.ts'

export interface InappSdkDeps {
  store: Store
  control: ControlStore
  files: Files
  /** Requests per second per app key, per edge (SLUICE_SDK_UPLOAD_RATE_PER_APP). */
  ratePerAppPerSecond: number
  /** How long an edge keeps an app's live in-app campaigns (default 2 s). */
  cacheMs?: number
  now?: () => number
}

const INSTALL = /^[\x21-\x7e]{1,128}$/
const SHA256 = /^[0-9a-f]{64}$/
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/

/**
 * The SDK's side of in-app campaigns (docs/campaigns.md, "The SDK endpoint"), authorised by the
 * app key like SDK uploads: `GET /v1/sdk/apps/:app_key/inapp?install_uuid=&device_type=` answers
 * the campaigns the install qualifies for now, each with its creative and the URL of its file;
 * `GET /v1/sdk/apps/:app_key/inapp/assets/:sha256/:name` serves that file.
 */
export function inappSdkRoutes(deps: InappSdkDeps) {
  const app = new Hono<EdgeEnv>()
  const now = deps.now ?? Date.now
  const live = new TtlCache<CampaignRow[]>(deps.cacheMs ?? 2000)
  const buckets = new TokenBuckets(deps.ratePerAppPerSecond, 1000)

  const appOf = async (appKey: string) => {
    const found = await deps.control.getApp(appKey)
    if (!found) throw new SluiceError('unauthorized', 401, 'unknown app key')
    return found
  }

  app.use(
    '/v1/sdk/apps/:app_key/inapp/*',
    rateLimit(buckets, (c) => c.req.param('app_key') ?? ''),
  )
  app.use(
    '/v1/sdk/apps/:app_key/inapp',
    rateLimit(buckets, (c) => c.req.param('app_key') ?? ''),
  )

  app.get('/v1/sdk/apps/:app_key/inapp', async (c) => {
    const target = await appOf(c.req.param('app_key'))
    const install = c.req.query('install_uuid') ?? ''
    if (!INSTALL.test(install))
      throw badRequest('install_uuid is required: the install asking (1..128 printable characters)')
    const deviceType = (c.req.query('device_type') ?? 'phone').toLowerCase()
    if (deviceType !== 'phone' && deviceType !== 'tablet')
      throw badRequest('device_type must be phone or tablet')
    const at = now()
    const candidates = await live.get(target.app_id, async () =>
      liveInappCampaigns(await readAppCampaigns(deps.store, target.app_id), at),
    )
    const offers = await inappOffers(
      deps.store,
      { orgId: target.org_id, appId: target.app_id },
      install,
      deviceType,
      liveInappCampaigns(candidates, at),
      at,
    )
    const base = new URL(c.req.url)
    return c.json({
      install_uuid: install,
      device_type: deviceType,
      campaigns: offers.map(({ campaign, body, creative, asset }) => ({
        id: campaign.id,
        name: body.name,
        goal: body.goal,
        creative: {
          id: creative.id,
          letter: creative.letter,
          ...(creative.title !== undefined && { title: creative.title }),
          position: creative.position,
          key_values: creative.key_values,
          file_name: asset.name,
          file_kind: asset.kind,
          url: new URL(assetPath(target.app_id, asset), base).toString(),
        },
        trigger: {
          ...(body.schedule.trigger_name !== undefined && { trigger_name: body.schedule.trigger_name }),
          ...(body.schedule.trigger_type !== undefined && { trigger_type: body.schedule.trigger_type }),
          ...(body.schedule.event_name !== undefined && { event_name: body.schedule.event_name }),
          ...(body.schedule.filter_attributes && { filter_attributes: body.schedule.filter_attributes }),
        },
        begin_date: body.schedule.begin_date,
        ...(body.schedule.end_date !== undefined && { end_date: body.schedule.end_date }),
        ...(body.schedule.frequency_attributes && {
          frequency_attributes: body.schedule.frequency_attributes,
        }),
      })),
    })
  })

  app.get('/v1/sdk/apps/:app_key/inapp/assets/:sha256/:name', async (c) => {
    const target = await appOf(c.req.param('app_key'))
    const sha = c.req.param('sha256')
    const name = c.req.param('name')
    // Both parts are checked before any path is made: nothing but this app's stored files is reachable.
    if (!SHA256.test(sha) || !FILE_NAME.test(name)) throw notFound('no such file')
    const path = `inapp/${target.app_id}/${sha}/${name}`
    if (!(await deps.files.exists(path))) throw notFound('no such file')
    const head = await deps.files.readAll(path)
    const asset: StoredAsset = {
      name,
      path,
      kind: head.subarray(0, 2).toString('latin1') === 'PK' ? 'zip' : 'html',
      bytes: head.length,
      sha256: sha,
    }
    return serveAsset(deps.files, asset)
  })

  return app
}

export const assetPath = (appId: string, asset: Pick<StoredAsset, 'sha256' | 'name'>) =>
  `/v1/sdk/apps/${encodeURIComponent(appId)}/inapp/assets/${asset.sha256}/${asset.name}`
