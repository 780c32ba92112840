import { Hono } from 'hono'
import { appSettingsFields } from '../../../schemas/app-settings.ts'
import { settingsView } from '../../../pipelines/query/app-settings-commands.ts'
import { newCommand } from '../../../pipelines/control/commands.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { readAppSettings } from '../../../pipelines/query/app-settings.ts'
import { asControlAnswer } from '../../control/control-errors.ts'
import { ControlCommandError, type ControlStore } from '../../control/control-store.ts'
import { notFound } from '../../shared/errors.ts'
import type { EdgeEnv } from '../env.ts'
import { adminAuth } from '../middleware/admin-auth.ts'
import { jsonBody } from '../validate.ts'

/**
 * An app's settings for the Apps and Query APIs, behind the admin token (docs/query-api.md):
 *   GET /admin/v1/apps/:app_id/settings                                    → 200 {app_id, time_zone, icon_url, custom_dimensions}
 *   PUT /admin/v1/apps/:app_id/settings {time_zone?, icon_url?, custom_dimensions?} → 200 the settings now
 * A PUT changes the fields it names (a null label removes it); the write is a control command.
 */
export function appSettingsAdminRoutes(deps: {
  control: ControlStore
  store: Store
  adminToken: string | undefined
}) {
  const app = new Hono<EdgeEnv>()
  const path = '/admin/v1/apps/:app_id/settings'
  app.use(path, adminAuth(deps.adminToken))

  const requireApp = async (appId: string) => {
    const found = await deps.control.getApp(appId)
    if (!found) throw notFound(`app ${appId} not found`)
    return found
  }

  app.get(path, async (c) => {
    const found = await requireApp(c.req.param('app_id'))
    const [settings] = await readAppSettings(deps.store, [found.app_id])
    return c.json(settings)
  })

  app.put(path, async (c) => {
    const found = await requireApp(c.req.param('app_id'))
    const fields = await jsonBody(c, appSettingsFields)
    try {
      const result = await deps.control.submit(
        newCommand('set-app-settings', { org_id: found.org_id, app_id: found.app_id, ...fields }, Date.now()),
      )
      if (result.status !== 200) {
        const error =
          (result.body as { error?: string } | null)?.error ?? `control command answered ${result.status}`
        throw new ControlCommandError(result.status, error)
      }
      return c.json(result.body as ReturnType<typeof settingsView>)
    } catch (err) {
      throw asControlAnswer(err)
    }
  })

  return app
}
