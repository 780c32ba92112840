import { Hono } from 'hono'
import { z } from 'zod'
import {
  parseTransportConfig,
  platformMismatch,
  platformsOfChoice,
  PLATFORM_CHOICES,
} from '../../../pipelines/push/transport-settings.ts'
import type { ControlStore } from '../../control/control-store.ts'
import type { PushTransportConfigs } from '../../push/transport-configs.ts'
import { badRequest, notFound } from '../../shared/errors.ts'
import type { EdgeEnv } from '../env.ts'
import { adminAuth } from '../middleware/admin-auth.ts'
import { jsonBody, parseParam } from '../validate.ts'
import { controlWrite } from '../../control/control-errors.ts'

const platformParam = z.enum(PLATFORM_CHOICES)
const setBody = z.object({ kind: z.unknown(), settings: z.unknown().optional() }).strict()

/**
 * Push transports per app (docs/push.md "Transports"), behind the admin token:
 *   PUT    /admin/v1/apps/:app_id/push/transports/:platform   {kind, settings}  → 200 the app's transports set
 *   GET    /admin/v1/apps/:app_id/push/transports                                → 200 every transport, masked
 *   DELETE /admin/v1/apps/:app_id/push/transports/:platform                      → 204, 404 when none was set
 * `:platform` is ios, android or all. Writes are control commands (applied by the control plane).
 */
export function pushTransportAdminRoutes(deps: {
  control: ControlStore
  configs: PushTransportConfigs
  adminToken: string | undefined
}) {
  const app = new Hono<EdgeEnv>()
  const base = '/admin/v1/apps/:app_id/push/transports'
  app.use(`${base}`, adminAuth(deps.adminToken))
  app.use(`${base}/*`, adminAuth(deps.adminToken))

  const requireApp = async (appId: string) => {
    const found = await deps.control.getApp(appId)
    if (!found) throw notFound(`app ${appId} not found`)
    return found
  }

  app.get(base, async (c) => {
    const found = await requireApp(c.req.param('app_id'))
    return c.json(await deps.configs.list(found.app_id))
  })

  app.put(`${base}/:platform`, async (c) => {
    const platform = parseParam(platformParam, c.req.param('platform'), 'platform')
    const found = await requireApp(c.req.param('app_id'))
    const body = await jsonBody(c, setBody)
    const parsed = parseTransportConfig(body.kind, body.settings)
    if (!parsed.ok) throw badRequest(parsed.errors.join('; '), { errors: parsed.errors })
    const mismatch = platformMismatch(parsed.config.kind, platformsOfChoice(platform))
    if (mismatch) throw badRequest(mismatch)
    return c.json(await controlWrite(() => deps.configs.set(found, platform, parsed.config)))
  })

  app.delete(`${base}/:platform`, async (c) => {
    const platform = parseParam(platformParam, c.req.param('platform'), 'platform')
    const found = await requireApp(c.req.param('app_id'))
    if (!(await controlWrite(() => deps.configs.remove(found, platform))))
      throw notFound(`no push transport set for ${platform} on app ${found.app_id}`)
    return c.body(null, 204)
  })

  return app
}
