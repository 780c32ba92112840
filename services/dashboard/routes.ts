import { fileURLToPath } from 'node:url'
import { Hono, type Context, type MiddlewareHandler } from 'hono'
import { deleteCookie, getCookie, setCookie } from 'hono/cookie'
import { html } from 'hono/html'
import { parse } from 'hono/utils/cookie'
import { packageFile, StaticAssets } from '../edge/static-assets.ts'
import { DashboardApi, errorsByField, type Dispatch } from './api.ts'
import { isHttps, writeSession, type DashboardApp, type DashboardDeps, type DashboardEnv } from './context.ts'
import { formErrors, input, page } from './layout.ts'
import { registerCampaigns } from './pages/campaigns.ts'
import { registerAnalytics } from './pages/analytics.ts'
import { registerAppSettings } from './pages/app-settings.ts'
import { registerAudiences } from './pages/audiences.ts'
import { registerDeadLetters } from './pages/dead-letters.ts'
import { registerExports } from './pages/exports.ts'
import { registerHealth } from './pages/health.ts'
import { registerOrgs } from './pages/orgs.ts'
import { registerPush } from './pages/push.ts'
import {
  csrfMatches,
  newCsrfToken,
  newSession,
  SESSION_COOKIE,
  SessionSealer,
  SIGN_IN_COOKIE,
  type Signed,
} from './session.ts'

/**
 * The dashboard's policy: everything from this edge, no inline script or style, no frames, forms
 * posting only here.
 */
export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const asset = (file: string) => fileURLToPath(new URL(`./assets/${file}`, import.meta.url))
const JS = 'text/javascript; charset=utf-8'
const CSS = 'text/css; charset=utf-8'

/**
 * The dashboard at /dashboard (docs/dashboard.md): server-rendered pages (Hono's html templates,
 * htmx for live parts), one more client of Sluice's public and admin APIs through `dispatch` (the
 * edge's own app), signed in with the admin token or an org's API key and secret.
 */
export function dashboardRoutes(options: { dispatch: Dispatch; adminToken: string | undefined }) {
  const app: DashboardApp = new Hono<DashboardEnv>()
  const deps: DashboardDeps = { dispatch: options.dispatch, sealer: new SessionSealer(options.adminToken) }
  const assets = new StaticAssets({
    'htmx.min.js': { path: packageFile('htmx.org', 'dist/htmx.min.js'), type: JS },
    'uPlot.iife.min.js': { path: packageFile('uplot', 'dist/uPlot.iife.min.js'), type: JS },
    'uPlot.min.css': { path: packageFile('uplot', 'dist/uPlot.min.css'), type: CSS },
    'dashboard.css': { path: asset('dashboard.css'), type: CSS },
    'dashboard.js': { path: asset('dashboard.js'), type: JS },
    'analytics.js': { path: asset('analytics.js'), type: JS },
  })

  app.use('/dashboard', securityHeaders)
  app.use('/dashboard/*', securityHeaders)
  app.get('/dashboard/assets/:name', (c) => assets.serve(c, c.req.param('name')))
  app.get('/dashboard', (c) => c.redirect('/dashboard/health', 302))

  app.get('/dashboard/sign-in', (c) => signInPage(c, {}))
  app.post('/dashboard/sign-in', async (c) => {
    const form = await c.req.parseBody()
    if (!sameOrigin(c) || !csrfMatches(getCookie(c, SIGN_IN_COOKIE), form.csrf))
      return signInPage(c, { '': ['the sign-in form expired; try again'] }, 403)
    const token = typeof form.token === 'string' ? form.token.trim() : ''
    const apiKey = typeof form.api_key === 'string' ? form.api_key.trim() : ''
    const secret = typeof form.api_secret === 'string' ? form.api_secret : ''
    let who: Signed
    if (token !== '') {
      // The admin API answers an operator: the same check (and failure count) as any admin call.
      const answer = await DashboardApi.of(deps.dispatch, c, { kind: 'admin', token }).call(
        'GET',
        '/admin/v1/orgs',
      )
      if (!answer.ok) return signInPage(c, { token: [answer.error] }, answer.status, apiKey)
      who = { kind: 'admin', token }
    } else if (apiKey !== '' && secret !== '') {
      const answer = await DashboardApi.of(deps.dispatch, c, {
        kind: 'key',
        apiKey,
        secret,
        orgId: 0,
        scopes: [],
      }).call<{ org_id: number; scopes: string[] }>('GET', '/v1/auth/check')
      if (!answer.ok) return signInPage(c, { api_secret: [answer.error] }, answer.status, apiKey)
      who = { kind: 'key', apiKey, secret, orgId: answer.body.org_id, scopes: answer.body.scopes }
    } else {
      return signInPage(c, { '': ['give the admin token, or an API key and its secret'] }, 400, apiKey)
    }
    deleteCookie(c, SIGN_IN_COOKIE, { path: '/dashboard' })
    writeSession(deps, c, newSession(who))
    return c.redirect('/dashboard/health', 303)
  })

  // Every other page needs a session; every write its CSRF token and a same-origin request.
  app.use('/dashboard/*', async (c, next) => {
    const session = deps.sealer.open(parse(c.req.header('Cookie') ?? '', SESSION_COOKIE)[SESSION_COOKIE])
    if (!session) {
      if (c.req.method === 'GET' && !c.req.header('HX-Request')) return c.redirect('/dashboard/sign-in', 302)
      return c.html(
        html`<p class="error" role="alert">
          your session is over: <a href="/dashboard/sign-in">sign in</a>
        </p>`,
        401,
      )
    }
    c.set('session', session)
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const form = await c.req.parseBody({ all: true })
      if (!sameOrigin(c) || !csrfMatches(session.csrf, form.csrf))
        return c.html(
          page(
            'Refused',
            session,
            html`<p class="error" role="alert">
              refused: this form's CSRF token is missing or wrong; reload the page and try again
            </p>`,
          ),
          403,
        )
    }
    await next()
  })

  app.post('/dashboard/sign-out', (c) => {
    deleteCookie(c, SESSION_COOKIE, { path: '/dashboard' })
    return c.redirect('/dashboard/sign-in', 303)
  })

  registerHealth(app, deps)
  registerOrgs(app, deps)
  registerDeadLetters(app, deps)
  registerExports(app, deps)
  registerCampaigns(app, deps)
  registerPush(app, deps)
  registerAnalytics(app, deps)
  registerAudiences(app, deps)
  registerAppSettings(app, deps)
  return app
}

const securityHeaders: MiddlewareHandler = async (c, next) => {
  await next()
  c.header('Content-Security-Policy', DASHBOARD_CSP)
  c.header('X-Content-Type-Options', 'nosniff')
  c.header('X-Frame-Options', 'DENY')
  // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on form posts.
  c.header('Referrer-Policy', 'same-origin')
  if (!c.req.path.startsWith('/dashboard/assets/')) c.header('Cache-Control', 'no-store')
}

/**
 * Not a write from another site: the browser's Sec-Fetch-Site says same-origin, or the Origin it
 * sends with every POST names this host.
 */
function sameOrigin(c: { req: { url: string; header(name: string): string | undefined } }): boolean {
  const site = c.req.header('Sec-Fetch-Site')
  if (site !== undefined && site !== 'same-origin') return false
  const origin = c.req.header('Origin')
  if (origin === undefined || origin === 'null') return origin === undefined
  try {
    return new URL(origin).host === (c.req.header('Host') ?? new URL(c.req.url).host)
  } catch {
    return false
  }
}

function signInPage(c: Context, errors: Record<string, string[]>, status = 200, apiKey = '') {
  const csrf = newCsrfToken()
  setCookie(c, SIGN_IN_COOKIE, csrf, {
    path: '/dashboard',
    httpOnly: true,
    sameSite: 'Strict',
    secure: isHttps(c),
  })
  const byField = errors[''] ? errors : errorsByField([], [])
  return c.html(
    page(
      'Sign in',
      undefined,
      html`<form method="post" action="/dashboard/sign-in" class="card">
        <input type="hidden" name="csrf" value="${csrf}" />
        ${formErrors(byField)}
        <fieldset>
          <legend>Operator: every org</legend>
          ${input('Admin token', 'token', { type: 'password', errors, autocomplete: 'off' })}
        </fieldset>
        <fieldset>
          <legend>Or an org's API key (that org, its scopes)</legend>
          ${input('API key', 'api_key', { value: apiKey, errors, autocomplete: 'username' })}
          ${input('API secret', 'api_secret', { type: 'password', errors, autocomplete: 'current-password' })}
        </fieldset>
        <button type="submit">Sign in</button>
      </form>`,
    ),
    status as 200,
  )
}
