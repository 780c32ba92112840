import { html } from 'hono/html'
import { apiOf, orgOfSession, type DashboardContext, type DashboardDeps } from '../context.ts'

/**
 * Which org and app a page works on, from its query string (`org`, `app`): an operator picks any
 * org (the admin API lists them and their apps), an org key is bound to its own org and picks one
 * of its apps (the public apps API, when the key may read it; else the app id is typed). The
 * API decides what the choice may see: this only offers choices. `chosen`: a form's own org and
 * app (a POST's path), over the query string.
 */
export async function pickOrgApp(
  deps: DashboardDeps,
  c: DashboardContext,
  action: string,
  chosen: { org?: string; app?: string } = {},
) {
  const session = c.get('session')
  const api = apiOf(deps, c)
  const orgId = orgOfSession(session, chosen.org ?? c.req.query('org'))
  let orgs: { id: number; name: string }[] = []
  let apps: string[] | undefined
  if (session.who.kind === 'admin') {
    const listed = await api.call<{ id: number; name: string }[]>('GET', '/admin/v1/orgs')
    if (listed.ok) orgs = listed.body
    if (orgId) {
      const own = await api.call<{ app_id: string }[]>('GET', `/admin/v1/orgs/${orgId}/apps`)
      if (own.ok) apps = own.body.map((a) => a.app_id)
    }
  } else {
    const own = await api.call<{ _embedded?: { apps?: { app_id: string }[] } }>('GET', '/v1/apps')
    if (own.ok) apps = (own.body._embedded?.apps ?? []).map((a) => a.app_id)
  }
  const asked = (chosen.app ?? c.req.query('app'))?.trim()
  const appId = asked || apps?.[0]
  const form = html`<form method="get" action="${action}" class="card row">
    ${
      session.who.kind === 'admin'
        ? html`<label for="pick-org">Org</label>
            <select id="pick-org" name="org">
              <option value="">choose an org</option>
              ${orgs.map((o) => html`<option value="${o.id}" ${o.id === orgId ? html`selected` : ''}>${o.id}: ${o.name}</option>`)}
            </select>`
        : html`<input type="hidden" name="org" value="${orgId}" />`
    }
    <label for="pick-app">App</label>
    ${
      apps && !(asked && !apps.includes(asked))
        ? html`<select id="pick-app" name="app">
            ${apps.map((a) => html`<option ${a === appId ? html`selected` : ''}>${a}</option>`)}
          </select>`
        : html`<input id="pick-app" name="app" value="${appId ?? ''}" placeholder="app id" />`
    }
    <button type="submit">Show</button>
  </form>`
  return { orgId, appId: orgId ? appId : undefined, form }
}
