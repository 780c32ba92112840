import type { Context, Hono } from 'hono'
import { setCookie } from 'hono/cookie'
import type { EdgeEnv } from '../edge/env.ts'
import { authorizationOf, DashboardApi, type Dispatch } from './api.ts'
import { SESSION_COOKIE, SESSION_HOURS, type Session, type SessionSealer } from './session.ts'

/** The dashboard's Hono environment: the edge's, plus the signed-in session. */
export interface DashboardEnv {
  Variables: EdgeEnv['Variables'] & { session: Session }
}
export type DashboardContext = Context<DashboardEnv>
export type DashboardApp = Hono<DashboardEnv>

export interface DashboardDeps {
  dispatch: Dispatch
  sealer: SessionSealer
}

/** The API as the signed-in user. */
export const apiOf = (deps: DashboardDeps, c: DashboardContext) => DashboardApi.of(deps.dispatch, c, c.get('session'))

/** Served over HTTPS (directly, or by a proxy that says so): the cookie is then Secure. */
export function isHttps(c: Context): boolean {
  return new URL(c.req.url).protocol === 'https:' || c.req.header('X-Forwarded-Proto')?.split(',')[0]?.trim() === 'https'
}

/** Sets the session's cookie: HttpOnly, SameSite=Strict, Secure under HTTPS, for /dashboard only. */
export function writeSession(deps: DashboardDeps, c: Context, session: Session): void {
  setCookie(c, SESSION_COOKIE, deps.sealer.seal(session), {
    path: '/dashboard',
    httpOnly: true,
    sameSite: 'Strict',
    secure: isHttps(c),
    maxAge: SESSION_HOURS * 3600,
  })
}

/** The org an org-key session is bound to; an operator picks any. */
export function orgOfSession(session: Session, asked: string | undefined): number | undefined {
  if (session.who.kind === 'key') return session.who.orgId
  const id = Number(asked)
  return Number.isInteger(id) && id > 0 ? id : undefined
}

/** Redirect after a write, with a notice for the next page (303: the browser GETs it). */
export function after(c: Context, path: string, notice: string): Response {
  const url = new URL(path, 'http://x')
  url.searchParams.set('notice', notice)
  return c.redirect(`${url.pathname}${url.search}`, 303)
}

/** A form field as a trimmed string ('' when absent or a file). */
export const field = (form: Record<string, unknown>, name: string): string => {
  const v = form[name]
  return typeof v === 'string' ? v.trim() : ''
}

/**
 * The public APIs as one org: an org key's own session, or, for an operator, a key of that org it
 * minted through the admin API (POST /admin/v1/orgs/:org_id/keys, listed with the org's keys) and
 * keeps in its sealed session cookie. Undefined for an org key asking for another org.
 */
export async function orgApi(
  deps: DashboardDeps,
  c: DashboardContext,
  orgId: number,
): Promise<{ ok: true; api: DashboardApi } | { ok: false; error: string; status: number }> {
  const session = c.get('session')
  const api = apiOf(deps, c)
  if (session.who.kind === 'key')
    return session.who.orgId === orgId
      ? { ok: true, api }
      : { ok: false, status: 403, error: `org ${orgId} is not the organization of this API key` }
  const known = session.orgKeys?.[orgId]
  if (known) return { ok: true, api: api.as(authorizationOf({ kind: 'key', apiKey: known.apiKey, secret: known.secret, orgId, scopes: [] })) }
  const minted = await api.call<{ api_key: string; api_secret: string }>('POST', `/admin/v1/orgs/${orgId}/keys`, {})
  if (!minted.ok) return { ok: false, status: minted.status, error: minted.error }
  const orgKeys = { ...session.orgKeys, [orgId]: { apiKey: minted.body.api_key, secret: minted.body.api_secret } }
  const next = { ...session, orgKeys }
  c.set('session', next)
  writeSession(deps, c, next)
  return {
    ok: true,
    api: api.as(authorizationOf({ kind: 'key', apiKey: minted.body.api_key, secret: minted.body.api_secret, orgId, scopes: [] })),
  }
}
