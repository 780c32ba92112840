import { Hono } from 'hono'
import type { ControlStore } from '../../control/control-store.ts'
import type { EdgeEnv } from '../env.ts'
import { apiAuth } from '../middleware/api-auth.ts'

/** Lets a user test a key: 200 {org_id, scopes} for valid credentials. */
export function authCheckRoutes(control: ControlStore) {
  const app = new Hono<EdgeEnv>()
  app.get('/v1/auth/check', apiAuth(control), (c) => {
    const principal = c.get('principal')
    return c.json({ org_id: principal.orgId, scopes: principal.scopes })
  })
  return app
}
