import type { MiddlewareHandler } from 'hono'
import type { ControlStore } from '../../control/control-store.ts'
import type { Scope } from '../../../schemas/admin.ts'
import { parseBasicAuth, verifySecret } from '../../control/credentials.ts'
import { SluiceError, forbidden } from '../../shared/errors.ts'
import type { AuthAttempts, EdgeEnv, Principal } from '../env.ts'

const invalidCredentials = () =>
  new SluiceError('unauthorized', 401, 'invalid credentials', {
    headers: { 'WWW-Authenticate': 'Basic realm="sluice", charset="UTF-8"' },
  })

/**
 * HTTP Basic auth with an org's API key and secret. Unknown key and wrong secret answer the same
 * 401 after the same work (a hash and a constant-time compare), so responses never reveal whether
 * a key exists. A key without the scope the route needs gets 403. Before any of it, the
 * per-address limit on failed attempts (auth-failure-limit.ts); a request without credentials is
 * no guess and does not count.
 */
export function apiAuth(control: ControlStore, scope?: Scope): MiddlewareHandler<EdgeEnv> {
  return async (c, next) => {
    const principal = await authenticate(control, c.req.header('Authorization'), c.get('authAttempts'), scope)
    c.set('principal', principal)
    await next()
  }
}

/** The check itself, for the middleware and for routes served before Hono's dispatch. */
export async function authenticate(
  control: ControlStore,
  authorization: string | undefined,
  attempts: AuthAttempts | undefined,
  scope: Scope | undefined,
): Promise<Principal> {
  attempts?.check()
  const credentials = parseBasicAuth(authorization)
  if (!credentials) throw invalidCredentials()
  const key = (control.cachedKey(credentials.user) ?? { value: await control.getKey(credentials.user) }).value
  const storedHash = key && !key.revoked ? key.secret_hash : '0'.repeat(64)
  const ok = verifySecret(credentials.user, credentials.password, storedHash)
  if (!ok || !key || key.revoked) {
    attempts?.failed()
    throw invalidCredentials()
  }
  if (scope && !key.scopes.includes(scope)) throw forbidden(`this API key lacks the '${scope}' scope`)
  return { orgId: key.org_id, apiKey: key.api_key, scopes: key.scopes }
}
