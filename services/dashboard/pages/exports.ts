import { html } from 'hono/html'
import { errorsByField } from '../api.ts'
import { after, apiOf, field, orgApi, orgOfSession, type DashboardApp, type DashboardContext, type DashboardDeps } from '../context.ts'
import { csrfField, formErrors, input, notice, page, table } from '../layout.ts'

interface ExportJob {
  id: number
  source_type: string
  source_id: string
  job_type: string
  name: string
  state: string
  enabled_at: string
  last_requested_at: string | null
  latest_file: { rows: number; bytes: number; generated_at: string } | null
}

type Errors = Record<string, string[]> | undefined
const FIELDS = ['source_type', 'source_id', 'job_types', 'name']

/**
 * Exports of an org through the admin API (enable, disable, refresh, state, latest file) and the
 * public export API for the download (the org's key: a 302 to the file's signed link).
 */
export function registerExports(app: DashboardApp, deps: DashboardDeps) {
  const render = async (c: DashboardContext, org: string | undefined, errors?: Errors, values: Record<string, string> = {}, status = 200) => {
    const session = c.get('session')
    if (session.who.kind !== 'admin')
      return c.html(page('Exports', session, html`<p class="error" role="alert">operators only (the admin token)</p>`), 403)
    const orgId = orgOfSession(session, org)
    const api = apiOf(deps, c)
    const orgs = await api.call<{ id: number; name: string }[]>('GET', '/admin/v1/orgs')
    const jobs = orgId ? await api.call<ExportJob[]>('GET', `/admin/v1/orgs/${orgId}/exports`) : undefined
    const body = html`${notice(c.req.query('notice'))}
<form method="get" action="/dashboard/exports" class="card row">
  <label for="org">Org</label>
  <select id="org" name="org">${orgs.ok ? orgs.body.map((o) => html`<option value="${o.id}"${o.id === orgId ? html` selected` : ''}>${o.id}: ${o.name}</option>`) : ''}</select>
  <button type="submit">Show</button>
</form>
${orgId && jobs
  ? html`${jobs.ok
      ? table(
          `Exports of org ${orgId}`,
          ['id', 'source', 'job type', 'name', 'state', 'latest file', ''],
          jobs.body.map((j) => [
            String(j.id),
            `${j.source_type} ${j.source_id}`,
            j.job_type,
            j.name,
            html`<span data-state="${j.id}">${j.state}</span>`,
            j.latest_file
              ? html`${j.latest_file.rows} rows, ${j.latest_file.bytes} B, ${j.latest_file.generated_at}${j.source_type !== 'logs' && j.state === 'enabled' ? html` <a href="/dashboard/exports/${orgId}/${j.id}/download">download</a>` : ''}`
              : 'none yet',
            j.state === 'disabled'
              ? ''
              : html`<form method="post" action="/dashboard/exports/${orgId}/${j.id}/refresh" class="inline">${csrfField(session)}${j.source_type === 'logs' ? html`<label for="hour-${j.id}">hour (UTC)</label><input id="hour-${j.id}" name="hour" placeholder="2026-11-23T13" size="13">` : ''}<button type="submit" aria-label="Refresh export ${j.id}">Refresh</button></form>
<form method="post" action="/dashboard/exports/${orgId}/${j.id}/disable" class="inline">${csrfField(session)}<button type="submit" aria-label="Disable export ${j.id}">Disable</button></form>`,
          ]),
        )
      : html`<p class="error" role="alert">${jobs.error}</p>`}
<form method="post" action="/dashboard/exports/${orgId}" class="card">
  <h2>Enable exports</h2>
  ${csrfField(session)}
  ${formErrors(errors)}
  <div class="field"><label for="source_type">Source</label>
  <select id="source_type" name="source_type">${['audiences', 'profiles', 'logs'].map((t) => html`<option${values.source_type === t ? html` selected` : ''}>${t}</option>`)}</select>
  ${errors?.source_type ? html`<p class="error" role="alert">${errors.source_type.join('; ')}</p>` : ''}</div>
  ${input('Source id (audience id, profile db id, or app id)', 'source_id', { value: values.source_id ?? '', errors })}
  ${input('Job types (comma-separated; empty: all)', 'job_types', { value: values.job_types ?? '', errors })}
  ${input('Name (optional)', 'name', { value: values.name ?? '', errors })}
  <button type="submit">Enable</button>
</form>`
  : ''}`
    return c.html(page('Exports', session, body), status as 200)
  }

  app.get('/dashboard/exports', (c) => render(c, c.req.query('org')))

  app.post('/dashboard/exports/:org', async (c) => {
    const org = c.req.param('org')
    const form = await c.req.parseBody()
    const values = Object.fromEntries(FIELDS.map((f) => [f, field(form, f)]))
    const sourceId = values.source_id ?? ''
    const body: Record<string, unknown> = {
      source_type: values.source_type,
      source_id: /^[1-9][0-9]*$/.test(sourceId) ? Number(sourceId) : sourceId,
    }
    if (values.job_types) body.job_types = values.job_types.split(',').map((s) => s.trim()).filter(Boolean)
    if (values.name) body.name = values.name
    const answer = await apiOf(deps, c).call<ExportJob[]>('POST', `/admin/v1/orgs/${encodeURIComponent(org)}/exports`, body)
    if (!answer.ok) return render(c, org, errorsByField(answer.errors, FIELDS), values, answer.status)
    return after(c, `/dashboard/exports?org=${org}`, `enabled: ${answer.body.map((j) => `export ${j.id} (${j.job_type})`).join(', ')}`)
  })

  app.post('/dashboard/exports/:org/:id/disable', async (c) => {
    const { org, id } = c.req.param()
    const answer = await apiOf(deps, c).call('DELETE', `/admin/v1/orgs/${encodeURIComponent(org)}/exports/${encodeURIComponent(id)}`)
    if (!answer.ok) return render(c, org, { '': [answer.error] }, {}, answer.status)
    return after(c, `/dashboard/exports?org=${org}`, `export ${id} disabled`)
  })

  app.post('/dashboard/exports/:org/:id/refresh', async (c) => {
    const { org, id } = c.req.param()
    const form = await c.req.parseBody()
    const hour = field(form, 'hour')
    const answer = await apiOf(deps, c).call('POST', `/admin/v1/orgs/${encodeURIComponent(org)}/exports/${encodeURIComponent(id)}/refresh`, hour ? { hour } : {})
    if (!answer.ok) return render(c, org, { '': [answer.error] }, {}, answer.status)
    return after(c, `/dashboard/exports?org=${org}`, `export ${id}: its file is being written`)
  })

  // The latest file, as the org's clients get it: the public export route's 302 to a signed link.
  app.get('/dashboard/exports/:org/:id/download', async (c) => {
    const { org, id } = c.req.param()
    const orgId = orgOfSession(c.get('session'), org)
    if (c.get('session').who.kind !== 'admin' || !orgId) return render(c, org, { '': ['operators only'] }, {}, 403)
    const job = await apiOf(deps, c).call<ExportJob & { source_id: string }>('GET', `/admin/v1/orgs/${orgId}/exports/${encodeURIComponent(id)}`)
    if (!job.ok) return render(c, org, { '': [job.error] }, {}, job.status)
    const path =
      job.body.source_type === 'audiences'
        ? `/v1/exports/audiences/${job.body.source_id}/${job.body.job_type}`
        : `/v1/exports/profiles/${job.body.source_id}/${job.body.job_type}`
    const scoped = await orgApi(deps, c, orgId)
    if (!scoped.ok) return render(c, org, { '': [scoped.error] }, {}, scoped.status)
    const res = await scoped.api.raw(path)
    const location = res.headers.get('Location')
    if (res.status !== 302 || !location) {
      const text = await res.text()
      let message = `the export API answered ${res.status}`
      try {
        message = (JSON.parse(text) as { error: string }).error ?? message
      } catch {
        // not JSON: the status says it
      }
      return render(c, org, { '': [message] }, {}, res.status)
    }
    return c.redirect(location, 302)
  })
}
