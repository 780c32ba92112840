import { html } from 'hono/html'
import { errorsByField } from '../api.ts'
import { after, apiOf, type DashboardApp, type DashboardContext, type DashboardDeps } from '../context.ts'
import { csrfField, formErrors, input, page } from '../layout.ts'

interface Settings {
  app_id: string
  time_zone: string
  icon_url: string
  custom_dimensions: Record<string, string>
}

const TITLE = 'Orgs, apps and keys'
const LABELS = Array.from({ length: 20 }, (_, i) => `custom_${i}_dimension`)
const FIELDS = ['time_zone', ...LABELS.map((l) => `custom_dimensions.${l}`), 'custom_dimensions']
/** The zones the engine and this runtime know, offered as the time zone input's suggestions. */
const ZONES = Intl.supportedValuesOf('timeZone')

/**
 * An app's settings (operators: `GET|PUT /admin/v1/apps/:app_id/settings`): its time zone, which
 * cuts the Query API's days, and the labels of its custom dimensions. A label emptied is removed.
 */
export function registerAppSettings(app: DashboardApp, deps: DashboardDeps) {
  const path = '/dashboard/orgs/:org/apps/:app/settings'

  const render = async (
    c: DashboardContext,
    errors?: Record<string, string[]>,
    typed?: Settings,
    status = 200,
  ) => {
    const session = c.get('session')
    if (session.who.kind !== 'admin')
      return c.html(
        page(TITLE, session, html`<p class="error" role="alert">operators only (the admin token)</p>`),
        403,
      )
    const org = c.req.param('org')
    const appId = c.req.param('app') ?? ''
    const stored = await apiOf(deps, c).call<Settings>(
      'GET',
      `/admin/v1/apps/${encodeURIComponent(appId)}/settings`,
    )
    if (!stored.ok)
      return c.html(
        page(TITLE, session, html`<p class="error" role="alert">${stored.error}</p>`),
        stored.status as 404,
      )
    const shown = typed ?? stored.body
    const body = html`<p><a href="/dashboard/orgs?org=${org}">Back to org ${org}</a></p>
      <form
        method="post"
        action="/dashboard/orgs/${org}/apps/${encodeURIComponent(appId)}/settings"
        class="card"
      >
        <h2>Settings of app ${appId}</h2>
        ${csrfField(session)} ${formErrors(errors)}
        <div class="field">
          <label for="time_zone">Time zone (IANA, e.g. Europe/Paris): the Query API's days</label>
          <input
            id="time_zone"
            name="time_zone"
            list="zones"
            value="${shown.time_zone}"
            autocomplete="off"
            ${errors?.time_zone?.length ? html`aria-invalid="true" aria-describedby="time_zone-error"` : ''}
          />
          <datalist id="zones">${ZONES.map((z) => html`<option value="${z}"></option>`)}</datalist>
          ${errors?.time_zone?.length ? html`<p class="error" id="time_zone-error" role="alert">${errors.time_zone.join('; ')}</p>` : ''}
        </div>
        <fieldset>
          <legend>Custom dimension labels (empty: none)</legend>
          <div class="grid">
            ${LABELS.map((label, i) =>
              input(`custom_${i}`, label, {
                value: shown.custom_dimensions[label] ?? '',
                errors,
                errorField: `custom_dimensions.${label}`,
              }),
            )}
          </div>
        </fieldset>
        <button type="submit">Save settings</button>
      </form>`
    return c.html(page(TITLE, session, body), status as 200)
  }

  app.get(path, (c) => render(c))

  app.post(path, async (c) => {
    const session = c.get('session')
    if (session.who.kind !== 'admin') return render(c)
    const form = await c.req.parseBody()
    const appId = c.req.param('app') ?? ''
    const stored = await apiOf(deps, c).call<Settings>(
      'GET',
      `/admin/v1/apps/${encodeURIComponent(appId)}/settings`,
    )
    const before = stored.ok ? stored.body.custom_dimensions : {}
    const text = (name: string) => (typeof form[name] === 'string' ? form[name].trim() : '')
    const labels: Record<string, string | null> = {}
    for (const label of LABELS) {
      const typed = text(label)
      if (typed !== '') labels[label] = typed
      else if (before[label] !== undefined) labels[label] = null
    }
    const answer = await apiOf(deps, c).call<Settings>(
      'PUT',
      `/admin/v1/apps/${encodeURIComponent(appId)}/settings`,
      {
        time_zone: text('time_zone'),
        custom_dimensions: labels,
      },
    )
    if (!answer.ok) {
      const typed: Settings = {
        app_id: appId,
        time_zone: text('time_zone'),
        icon_url: '',
        custom_dimensions: Object.fromEntries(LABELS.map((l) => [l, text(l)])),
      }
      const errors = errorsByField(answer.errors, FIELDS)
      // The control command names its field without a colon ("time_zone \"X\" is not …").
      const zone = errors['']?.filter((m) => m.startsWith('time_zone '))
      if (zone?.length) {
        errors.time_zone = [...(errors.time_zone ?? []), ...zone]
        errors[''] = errors['']!.filter((m) => !zone.includes(m))
      }
      return render(c, errors, typed, answer.status)
    }
    return after(
      c,
      `/dashboard/orgs?org=${c.req.param('org')}`,
      `settings of app ${appId} saved (time zone ${answer.body.time_zone})`,
    )
  })
}
