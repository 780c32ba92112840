import { html } from 'hono/html'
import { SCOPES } from '../../../schemas/admin.ts'
import { errorsByField } from '../api.ts'
import {
  after,
  apiOf,
  field,
  orgOfSession,
  type DashboardApp,
  type DashboardContext,
  type DashboardDeps,
} from '../context.ts'
import { csrfField, formErrors, input, notice, page, table } from '../layout.ts'

interface Org {
  id: number
  name: string
  profiledb_id: number
}
interface App {
  app_id: string
  name: string
  profiledb_id: number
}
interface Key {
  api_key: string
  scopes: string[]
  revoked: boolean
}

type Errors = Record<string, string[]> | undefined
interface Shown {
  orgErrors?: Errors
  appErrors?: Errors
  keyErrors?: Errors
  newKey?: { api_key: string; api_secret: string; scopes: string[] }
  values?: Record<string, string>
}

/** Orgs, apps and keys through the admin API: create, list, revoke; an org key sees its own org. */
export function registerOrgs(app: DashboardApp, deps: DashboardDeps) {
  const render = async (c: DashboardContext, shown: Shown = {}, status = 200, org = c.req.query('org')) => {
    const session = c.get('session')
    const api = apiOf(deps, c)
    if (session.who.kind === 'key') {
      const who = session.who
      return c.html(
        page(
          'Orgs, apps and keys',
          session,
          html`<p>
              Signed in with API key <code>${who.apiKey}</code> of org
              <strong data-org="${who.orgId}">${who.orgId}</strong>, scopes ${who.scopes.join(', ')}.
            </p>
            <p>
              Apps and keys are managed by an operator (the admin token); this key sees its own org only.
            </p>`,
        ),
      )
    }
    const orgs = await api.call<Org[]>('GET', '/admin/v1/orgs')
    const orgId = orgOfSession(session, org)
    const selected = orgs.ok ? orgs.body.find((o) => o.id === orgId) : undefined
    const [apps, keys] = selected
      ? await Promise.all([
          api.call<App[]>('GET', `/admin/v1/orgs/${selected.id}/apps`),
          api.call<Key[]>('GET', `/admin/v1/orgs/${selected.id}/keys`),
        ])
      : [undefined, undefined]
    const v = shown.values ?? {}
    const body = html`${notice(c.req.query('notice'))}
      ${
        orgs.ok
          ? table(
              'Orgs',
              ['id', 'name', 'profile db', ''],
              orgs.body.map((o) => [
                String(o.id),
                o.name,
                String(o.profiledb_id),
                html`<a href="/dashboard/orgs?org=${o.id}">open</a>`,
              ]),
            )
          : html`<p class="error" role="alert">${orgs.error}</p>`
      }
      <form method="post" action="/dashboard/orgs" class="card">
        <h2>New org</h2>
        ${csrfField(session)} ${formErrors(shown.orgErrors)}
        ${input('Name', 'name', { id: 'org-name', value: v.org_name ?? '', errors: shown.orgErrors })}
        <button type="submit">Create org</button>
      </form>
      ${
        selected
          ? html`<h2 id="org">Org ${selected.id}: ${selected.name}</h2>
              ${
                shown.newKey
                  ? html`<div class="notice secret" role="status">
                      <p>New API key — copy the secret now, it is shown only once.</p>
                      <dl>
                        <dt>API key</dt>
                        <dd><code data-new-key>${shown.newKey.api_key}</code></dd>
                        <dt>API secret</dt>
                        <dd><code data-new-secret>${shown.newKey.api_secret}</code></dd>
                        <dt>scopes</dt>
                        <dd>${shown.newKey.scopes.join(', ')}</dd>
                      </dl>
                    </div>`
                  : ''
              }
              ${
                apps?.ok
                  ? table(
                      'Apps',
                      ['app id (app key)', 'name', 'profile db', ''],
                      apps.body.map((a) => [
                        a.app_id,
                        a.name,
                        String(a.profiledb_id),
                        html`<a
                          href="/dashboard/orgs/${selected.id}/apps/${encodeURIComponent(a.app_id)}/settings"
                          aria-label="Settings of ${a.app_id}"
                          >settings</a
                        >`,
                      ]),
                    )
                  : ''
              }
              <form method="post" action="/dashboard/orgs/${selected.id}/apps" class="card">
                <h3>New app</h3>
                ${csrfField(session)} ${formErrors(shown.appErrors)}
                ${input('Name', 'name', { id: 'app-name', value: v.app_name ?? '', errors: shown.appErrors })}
                ${input('App id (optional: generated)', 'app_id', { value: v.app_id ?? '', errors: shown.appErrors })}
                <button type="submit">Create app</button>
              </form>
              ${
                keys?.ok
                  ? table(
                      'API keys',
                      ['API key', 'scopes', 'state', ''],
                      keys.body.map((k) => [
                        k.api_key,
                        k.scopes.join(', '),
                        k.revoked ? 'revoked' : 'active',
                        k.revoked
                          ? ''
                          : html`<form
                              method="post"
                              action="/dashboard/orgs/${selected.id}/keys/${encodeURIComponent(k.api_key)}/revoke"
                              class="inline"
                            >
                              ${csrfField(session)}<button type="submit" aria-label="Revoke ${k.api_key}">
                                Revoke
                              </button>
                            </form>`,
                      ]),
                    )
                  : ''
              }
              <form method="post" action="/dashboard/orgs/${selected.id}/keys" class="card">
                <h3>New API key</h3>
                ${csrfField(session)} ${formErrors(shown.keyErrors)}
                <fieldset>
                  <legend>Scopes</legend>
                  ${SCOPES.map((s) => html`<label class="check"><input type="checkbox" name="scopes" value="${s}" checked /> ${s}</label>`)}
                </fieldset>
                <button type="submit">Create key</button>
              </form>`
          : ''
      }`
    return c.html(page('Orgs, apps and keys', session, body), status as 200)
  }

  const operatorOnly = (c: DashboardContext) =>
    c.get('session').who.kind === 'admin'
      ? undefined
      : c.html(
          page(
            'Refused',
            c.get('session'),
            html`<p class="error" role="alert">operators only (the admin token)</p>`,
          ),
          403,
        )

  app.get('/dashboard/orgs', (c) => render(c))

  app.post('/dashboard/orgs', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const form = await c.req.parseBody()
    const answer = await apiOf(deps, c).call<Org>('POST', '/admin/v1/orgs', { name: field(form, 'name') })
    if (!answer.ok)
      return render(
        c,
        { orgErrors: errorsByField(answer.errors, ['name']), values: { org_name: field(form, 'name') } },
        answer.status,
      )
    return after(c, `/dashboard/orgs?org=${answer.body.id}`, `org ${answer.body.id} created`)
  })

  app.post('/dashboard/orgs/:org/apps', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const form = await c.req.parseBody()
    const org = c.req.param('org')
    const body: Record<string, string> = { name: field(form, 'name') }
    if (field(form, 'app_id') !== '') body.app_id = field(form, 'app_id')
    const answer = await apiOf(deps, c).call<App>(
      'POST',
      `/admin/v1/orgs/${encodeURIComponent(org)}/apps`,
      body,
    )
    if (!answer.ok) {
      return render(
        c,
        {
          appErrors: errorsByField(answer.errors, ['name', 'app_id']),
          values: { app_name: body.name ?? '', app_id: body.app_id ?? '' },
        },
        answer.status,
        org,
      )
    }
    return after(c, `/dashboard/orgs?org=${org}`, `app ${answer.body.app_id} created`)
  })

  app.post('/dashboard/orgs/:org/keys', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const form = await c.req.parseBody({ all: true })
    const org = c.req.param('org')
    const scopes = ([] as unknown[])
      .concat(form.scopes ?? [])
      .filter((s): s is string => typeof s === 'string')
    const answer = await apiOf(deps, c).call<Shown['newKey']>(
      'POST',
      `/admin/v1/orgs/${encodeURIComponent(org)}/keys`,
      { scopes },
    )
    if (!answer.ok)
      return render(c, { keyErrors: errorsByField(answer.errors, ['scopes']) }, answer.status, org)
    // Shown here and never again: the API gives the secret only in this answer.
    return render(c, { newKey: answer.body! }, 201, org)
  })

  app.post('/dashboard/orgs/:org/keys/:key/revoke', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const org = c.req.param('org')
    const key = c.req.param('key')
    const answer = await apiOf(deps, c).call(
      'DELETE',
      `/admin/v1/orgs/${encodeURIComponent(org)}/keys/${encodeURIComponent(key)}`,
    )
    if (!answer.ok) return render(c, { keyErrors: { '': [answer.error] } }, answer.status, org)
    return after(c, `/dashboard/orgs?org=${org}`, `key ${key} revoked`)
  })
}
