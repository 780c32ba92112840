import { Hono } from 'hono'
import { AppIdTakenError, type ControlStore } from '../../../pipelines/control/control-store.ts'
import { createAppBody, createKeyBody, createOrgBody, orgIdParam } from '../../../schemas/admin.ts'
import { conflict, notFound } from '../../shared/errors.ts'
import { adminAuth } from '../middleware/admin-auth.ts'
import { jsonBody, parseParam } from '../validate.ts'

/** The "dashboard": orgs, apps and API keys, behind the admin bearer token. */
export function adminRoutes(control: ControlStore, adminToken: string | undefined) {
  const app = new Hono()
  app.use('*', adminAuth(adminToken))

  const requireOrg = async (raw: string | undefined) => {
    const orgId = parseParam(orgIdParam, raw, 'org_id')
    if (!(await control.getOrg(orgId))) throw notFound(`org ${orgId} not found`)
    return orgId
  }

  app.post('/orgs', async (c) => {
    const body = await jsonBody(c, createOrgBody)
    return c.json(await control.createOrg(body.name), 201)
  })

  app.get('/orgs', async (c) => c.json(await control.listOrgs()))

  app.get('/orgs/:org_id', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    return c.json(await control.getOrg(orgId))
  })

  app.post('/orgs/:org_id/apps', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const body = await jsonBody(c, createAppBody)
    try {
      return c.json(await control.createApp(orgId, body.name, body.app_id), 201)
    } catch (err) {
      if (err instanceof AppIdTakenError) throw conflict(err.message)
      throw err
    }
  })

  app.get('/orgs/:org_id/apps', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    return c.json(await control.listApps(orgId))
  })

  app.post('/orgs/:org_id/keys', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const body = await jsonBody(c, createKeyBody)
    return c.json(await control.createKey(orgId, body.scopes), 201)
  })

  app.get('/orgs/:org_id/keys', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    return c.json(await control.listKeys(orgId))
  })

  app.delete('/orgs/:org_id/keys/:api_key', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const revoked = await control.revokeKey(orgId, c.req.param('api_key'))
    if (!revoked) throw notFound('api key not found')
    return c.body(null, 204)
  })

  return app
}
