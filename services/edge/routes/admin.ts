import { Hono } from 'hono'
import type { Bus } from '../../../pipelines/connectors/bus/bus.ts'
import type { ControlStore } from '../../control/control-store.ts'
import type { DeadLetterStore } from '../../../pipelines/failures/dead-letters.ts'
import { replayDeadLetter } from '../../../pipelines/failures/replay.ts'
import {
  createAppBody,
  createKeyBody,
  createOrgBody,
  deadLettersQuery,
  orgIdParam,
} from '../../../schemas/admin.ts'
import { badRequest, notFound } from '../../shared/errors.ts'
import { adminAuth } from '../middleware/admin-auth.ts'
import { formatIssues, jsonBody, parseParam } from '../validate.ts'
import { controlWrite } from '../../control/control-errors.ts'

/** What the dead-letter endpoints need: the store to read, the bus to replay onto. */
export interface DeadLetterAdmin {
  store: DeadLetterStore
  bus: Bus
}

/** The "dashboard": orgs, apps, API keys and dead letters, behind the admin bearer token. */
export function adminRoutes(
  control: ControlStore,
  adminToken: string | undefined,
  deadLetters?: DeadLetterAdmin,
) {
  const app = new Hono()
  app.use('*', adminAuth(adminToken))

  const requireOrg = async (raw: string | undefined) => {
    const orgId = parseParam(orgIdParam, raw, 'org_id')
    if (!(await control.getOrg(orgId))) throw notFound(`org ${orgId} not found`)
    return orgId
  }

  app.post('/orgs', async (c) => {
    const body = await jsonBody(c, createOrgBody)
    return c.json(await controlWrite(() => control.createOrg(body.name)), 201)
  })

  app.get('/orgs', async (c) => c.json(await control.listOrgs()))

  app.get('/orgs/:org_id', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    return c.json(await control.getOrg(orgId))
  })

  app.post('/orgs/:org_id/apps', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const body = await jsonBody(c, createAppBody)
    return c.json(await controlWrite(() => control.createApp(orgId, body.name, body.app_id)), 201)
  })

  app.get('/orgs/:org_id/apps', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    return c.json(await control.listApps(orgId))
  })

  app.post('/orgs/:org_id/keys', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const body = await jsonBody(c, createKeyBody)
    return c.json(await controlWrite(() => control.createKey(orgId, body.scopes)), 201)
  })

  app.get('/orgs/:org_id/keys', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    return c.json(await control.listKeys(orgId))
  })

  app.delete('/orgs/:org_id/keys/:api_key', async (c) => {
    const orgId = await requireOrg(c.req.param('org_id'))
    const revoked = await controlWrite(() => control.revokeKey(orgId, c.req.param('api_key')))
    if (!revoked) throw notFound('api key not found')
    return c.body(null, 204)
  })

  // The latest run of each scheduled job: when the scheduler and the control applier last worked.
  app.get('/jobs', async (c) => c.json(await control.listJobRuns()))

  if (deadLetters) {
    // Newest first; a value over 64 KB is listed as null (GET /dead-letters/:id has it whole).
    app.get('/dead-letters', async (c) => {
      const query = deadLettersQuery.safeParse(c.req.query())
      if (!query.success) throw badRequest(formatIssues(query.error.issues))
      return c.json(await deadLetters.store.list(query.data))
    })

    app.get('/dead-letters/:id', async (c) => {
      const letter = await deadLetters.store.get(c.req.param('id'))
      if (!letter) throw notFound('dead letter not found')
      return c.json(letter)
    })

    // Produces the record again onto its topic and partition, with its key and headers.
    app.post('/dead-letters/:id/replay', async (c) => {
      const replayed = await replayDeadLetter(
        { deadLetters: deadLetters.store, bus: deadLetters.bus },
        c.req.param('id'),
      )
      if (!replayed) throw notFound('dead letter not found')
      return c.json(replayed, 202)
    })
  }

  return app
}
