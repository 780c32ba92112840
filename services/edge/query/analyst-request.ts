import type { Context } from 'hono'
import { formPairs, nestPairs, ParamsError, type RawParams } from '../../../pipelines/query/query-params.ts'
import type { ControlStore } from '../../control/control-store.ts'
import { badRequest, forbidden } from '../../shared/errors.ts'
import type { EdgeEnv, Principal } from '../env.ts'
import { authenticate } from '../middleware/api-auth.ts'
import { readBoundedBody } from '../read-body.ts'

/** Largest body of a query (a JSON body or a form): queries are small; 413 beyond. */
const MAX_BODY_BYTES = 256 * 1024

/**
 * An analyst's request to the Query or Apps API: its parameters from the query string, then a form
 * or JSON body (the body's win), and its principal. Credentials are `api_key` and `api_secret`
 * parameters when given (they win over HTTP Basic, as the original's), else HTTP Basic; both go
 * through the same check (a hash and a constant-time compare). The credentials are taken out of
 * the parameters.
 */
export async function analystRequest(
  c: Context<EdgeEnv>,
  control: ControlStore,
): Promise<{ params: RawParams; principal: Principal }> {
  const params = await requestParams(c)
  const key = single(params.api_key)
  const secret = single(params.api_secret)
  delete params.api_key
  delete params.api_secret
  const authorization =
    key !== undefined && secret !== undefined
      ? `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`
      : c.req.header('Authorization')
  const principal = await authenticate(control, authorization, c.get('authAttempts'), 'query')
  c.set('principal', principal)
  return { params, principal }
}

const single = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)

async function requestParams(c: Context<EdgeEnv>): Promise<RawParams> {
  const url = new URL(c.req.url)
  let params: RawParams
  try {
    params = nestPairs(formPairs(url.search))
  } catch (err) {
    if (err instanceof ParamsError) throw badRequest(err.message)
    throw err
  }
  if (c.req.method === 'GET' || c.req.method === 'HEAD') return params
  const body = await readBoundedBody(c.req.raw, MAX_BODY_BYTES)
  const text = body.toString('utf8').trim()
  if (text === '') return params
  const type = (c.req.header('Content-Type') ?? '').toLowerCase()
  // A JSON body is recognised by its type or, whatever the type says, by its first character.
  if (type.includes('json') || text.startsWith('{')) {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      throw badRequest('the body is not valid JSON')
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw badRequest('the JSON body must be an object of query parameters')
    return { ...params, ...(value as RawParams) }
  }
  try {
    return { ...params, ...nestPairs(formPairs(text)) }
  } catch (err) {
    if (err instanceof ParamsError) throw badRequest(err.message)
    throw err
  }
}

/** The apps, if every one belongs to the principal's org; else 403, the same for an unknown app. */
export async function ownApps(control: ControlStore, principal: Principal, appIds: readonly string[]) {
  const apps = await Promise.all(appIds.map((id) => control.getApp(id)))
  return apps.map((app, i) => {
    if (!app || app.org_id !== principal.orgId)
      throw forbidden(`app ${JSON.stringify(appIds[i])} is not accessible with this API key`)
    return app
  })
}
