import { html } from 'hono/html'
import { apiOf, orgApi, orgOfSession, type DashboardContext, type DashboardDeps } from './context.ts'
import { fieldErrors } from './layout.ts'

export interface PickedApp {
  /** The orgs an operator may pick from (undefined for an org key: its own org only). */
  orgs?: { id: number; name: string }[]
  orgId?: number
  apps: { app_id: string; name: string }[]
  /** The app asked for, when it is one of the org's apps. */
  appId?: string
  /** Why the org's apps could not be listed (the API's message). */
  error?: string
}

/**
 * The org and app a page works on, from its query string (`org`, `app`): an operator picks any org
 * (the admin API lists orgs and apps), an org key its own org, whose apps the Apps API lists.
 */
export async function pickApp(
  deps: DashboardDeps,
  c: DashboardContext,
  askedOrg = c.req.query('org'),
  askedApp = c.req.query('app'),
): Promise<PickedApp> {
  const session = c.get('session')
  const orgId = orgOfSession(session, askedOrg)
  let orgs: PickedApp['orgs']
  let apps: PickedApp['apps'] = []
  let error: string | undefined
  if (session.who.kind === 'admin') {
    const api = apiOf(deps, c)
    const listed = await api.call<{ id: number; name: string }[]>('GET', '/admin/v1/orgs')
    if (listed.ok) orgs = listed.body.map((o) => ({ id: o.id, name: o.name }))
    else error = listed.error
    if (orgId && listed.ok) {
      const found = await api.call<{ app_id: string; name: string }[]>('GET', `/admin/v1/orgs/${orgId}/apps`)
      if (found.ok) apps = found.body
      else error = found.error
    }
  } else if (orgId) {
    const keyed = await orgApi(deps, c, orgId)
    const found = keyed.ok
      ? await keyed.api.call<{ _embedded: { apps: { app_id: string; name: string }[] } }>('GET', '/v1/apps')
      : keyed
    if (found.ok) apps = found.body._embedded.apps.map((a) => ({ app_id: a.app_id, name: a.name }))
    else error = found.error
  }
  // An app of another org (the org select changed): the org's first app.
  const appId = apps.find((a) => a.app_id === askedApp)?.app_id ?? apps[0]?.app_id
  return {
    ...(orgs && { orgs }),
    ...(orgId !== undefined && { orgId }),
    apps,
    ...(appId !== undefined && { appId }),
    ...(error !== undefined && { error }),
  }
}

/** The org (operators) and app selects of a page's GET form, with the listing's error under them. */
export function pickerFields(picked: PickedApp, errors?: Record<string, string[]>) {
  return html`${
      picked.orgs
        ? html`<div class="field">
            <label for="org">Org</label>
            <select id="org" name="org">
              <option value="">choose an org</option>
              ${picked.orgs.map((o) => html`<option value="${o.id}" ${o.id === picked.orgId ? html` selected` : ''}>${o.id}: ${o.name}</option>`)}
            </select>
          </div>`
        : ''
    }
    <div class="field">
      <label for="app">App</label>
      <select
        id="app"
        name="app"
        ${errors?.app?.length ? html` aria-invalid="true" aria-describedby="app-error"` : ''}
      >
        ${picked.apps.map((a) => html`<option value="${a.app_id}" ${a.app_id === picked.appId ? html` selected` : ''}>${a.name} (${a.app_id})</option>`)}
      </select>
      ${fieldErrors(picked.error ? { app: [picked.error, ...(errors?.app ?? [])] } : errors, 'app', 'app')}
    </div>`
}
