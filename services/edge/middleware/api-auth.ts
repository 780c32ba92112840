import type { MiddlewareHandler } from 'hono'
import type { ApiKeyRecord, ControlStore } from '../../control/control-store.ts'
import type { Scope } from '../../../schemas/admin.ts'
import { parseBasicAuth, VerifiedCredentials, verifySecret } from '../../control/credentials.ts'
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

/** What a connection remembers of its authentication: the credentials it last had verified. */
export interface ConnectionAuth {
  verified?: VerifiedCredentials
}

/**
 * The check itself, for the middleware and for routes served before Hono's dispatch. With
 * `connection`, a request presenting exactly the header its connection last had verified skips
 * the parse and the hash (rememberedPrincipal); anything else takes the full check, and a success
 * there becomes what the connection remembers.
 */
export async function authenticate(
  control: ControlStore,
  authorization: string | undefined,
  attempts: AuthAttempts | undefined,
  scope: Scope | undefined,
  connection?: ConnectionAuth,
): Promise<Principal> {
  attempts?.check()
  const remembered = connection && rememberedPrincipal(control, authorization, scope, connection)
  if (remembered) return remembered
  const credentials = parseBasicAuth(authorization)
  if (!credentials) throw invalidCredentials()
  const key = (control.cachedKey(credentials.user) ?? { value: await control.getKey(credentials.user) }).value
  const storedHash = key && !key.revoked ? key.secret_hash : '0'.repeat(64)
  const ok = verifySecret(credentials.user, credentials.password, storedHash)
  if (!ok || !key || key.revoked) {
    attempts?.failed()
    throw invalidCredentials()
  }
  if (connection) connection.verified = VerifiedCredentials.of(authorization!, key.api_key, key.secret_hash)
  return principalOf(key, scope)
}

/**
 * The principal of a request presenting exactly the header its connection last had verified, as
 * long as the key, as the control store's cache has it now, is not revoked and still has the secret
 * hash it was verified against; undefined when the full check must run. Synchronous, so the upload
 * route can skip an await per request (it checks the failure limit first, as authenticate does,
 * and calls authenticate when this is undefined).
 */
export function rememberedPrincipal(
  control: ControlStore,
  authorization: string | undefined,
  scope: Scope | undefined,
  connection: ConnectionAuth,
): Principal | undefined {
  const known = connection.verified
  if (!known || authorization === undefined || !known.matches(authorization)) return undefined
  const key = control.cachedKey(known.apiKey)?.value
  return key && !key.revoked && key.secret_hash === known.secretHash ? principalOf(key, scope) : undefined
}

function principalOf(key: ApiKeyRecord, scope: Scope | undefined): Principal {
  if (scope && !key.scopes.includes(scope)) throw forbidden(`this API key lacks the '${scope}' scope`)
  return { orgId: key.org_id, apiKey: key.api_key, scopes: key.scopes }
}
