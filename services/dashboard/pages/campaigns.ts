import { html } from 'hono/html'
import type { CampaignReport } from '../../../pipelines/push/reports.ts'
import { LIST_CHANNELS, SEARCH_STATUSES } from '../../../schemas/campaigns.ts'
import { errorsByField, type DashboardApi } from '../api.ts'
import { after, orgApi, type DashboardApp, type DashboardContext, type DashboardDeps } from '../context.ts'
import { csrfField, formErrors, notice, page, table } from '../layout.ts'
import {
  bodyOfValues,
  campaignErrors,
  campaignForm,
  creativeCount,
  valuesOfCampaign,
  type Channel,
  type Errors,
  type Values,
} from './campaign-form.ts'
import { pickOrgApp } from './org-app.ts'

const TITLE = 'Campaigns'

interface ListItem {
  id: number
  name: string
  message_type: string
  status: string
  begin_date: string | null
  end_date: string | null
  recurring: number
  sends: number
  open_rate: string
  created_at: string
}
interface CampaignList {
  records_count: number
  total_records: number
  campaigns: ListItem[]
}
interface Variant {
  variant: string
  assigned: number
  targeted: number
  sent: number
  conversions: number
  conversion_rate: number
  lift: number | null
}
interface Performance {
  conversion_event: string | null
  conversion_window_days: number
  variants: Variant[]
}
/** The push API's answer for a campaign key. */
type PushReport = CampaignReport

/** The list's query parameters, as the campaigns API names them (docs/campaigns.md, "List and search"). */
const LIST_PARAMS = [
  'key',
  'channel',
  'status',
  'sort_by',
  'sort_order',
  'per_page',
  'page_number',
  'recurring',
  'is_archived',
] as const

const CHANNEL_NAMES: Record<Channel, string> = { push: 'push', inapp: 'in-app' }
const channelOf = (raw: string): Channel | undefined => (raw === 'push' || raw === 'inapp' ? raw : undefined)

/**
 * Push and in-app campaigns through the campaigns API (/api/v6/orgs/:org_id/apps/:app_id/…), as
 * the org: list, search and filter; create and edit (in-app with its files, multipart as the API
 * takes it); a campaign's performance per variant and its deliveries and opens (the push report
 * of its campaign key `campaign:<id>`); archive and delete.
 */
export function registerCampaigns(app: DashboardApp, deps: DashboardDeps) {
  const base = (org: number | string, appId: string) =>
    `/dashboard/campaigns/${org}/${encodeURIComponent(appId)}`
  const apiBase = (org: number | string, appId: string) =>
    `/api/v6/orgs/${org}/apps/${encodeURIComponent(appId)}`

  const refusal = (c: DashboardContext, message: string, status: number) =>
    c.html(page(TITLE, c.get('session'), html`<p class="error" role="alert">${message}</p>`), status as 403)

  /** The org's API for a page under /dashboard/campaigns/:org/:app, or the refusal to answer. */
  const scoped = async (c: DashboardContext) => {
    const org = Number(c.req.param('org'))
    if (!Number.isInteger(org) || org <= 0) return { refused: refusal(c, 'not an org id', 400) }
    const answer = await orgApi(deps, c, org)
    if (!answer.ok) return { refused: refusal(c, answer.error, answer.status) }
    const appId = c.req.param('app') ?? ''
    return { api: answer.api, org, appId }
  }

  app.get('/dashboard/campaigns', async (c) => {
    const session = c.get('session')
    const picked = await pickOrgApp(deps, c, '/dashboard/campaigns')
    const query = Object.fromEntries(
      LIST_PARAMS.map((p) => [p, c.req.query(p)?.trim() ?? '']).filter(([, v]) => v !== ''),
    ) as Record<string, string>
    let listing: Awaited<ReturnType<DashboardApi['call']>> | undefined
    if (picked.orgId && picked.appId) {
      const scopedApi = await orgApi(deps, c, picked.orgId)
      const path = `${apiBase(picked.orgId, picked.appId)}/campaigns${query.key ? '/search' : ''}`
      listing = scopedApi.ok
        ? await scopedApi.api.call<CampaignList>('GET', `${path}?${new URLSearchParams(query).toString()}`)
        : {
            ok: false,
            status: scopedApi.status,
            error: scopedApi.error,
            errors: [scopedApi.error],
            headers: new Headers(),
          }
    }
    const errors = listing && !listing.ok ? errorsByField(listing.errors, [...LIST_PARAMS]) : undefined
    const body = html`${notice(c.req.query('notice'))} ${picked.form}
    ${
      picked.orgId && picked.appId
        ? html`<p class="actions">
              <a href="${base(picked.orgId, picked.appId)}/new/push">New push campaign</a>
              <a href="${base(picked.orgId, picked.appId)}/new/inapp">New in-app campaign</a>
            </p>
            ${filterForm(picked.orgId, picked.appId, query, errors)}
            ${
              listing?.ok
                ? campaignTable(base(picked.orgId, picked.appId), listing.body as CampaignList, {
                    org: String(picked.orgId),
                    app: picked.appId,
                    ...query,
                  })
                : ''
            }`
        : html`<p>Choose an org and an app.</p>`
    }`
    return c.html(page(TITLE, session, body), listing && !listing.ok ? (listing.status as 400) : 200)
  })

  const formPage = (
    c: DashboardContext,
    options: { org: number; appId: string; channel: Channel; id?: number; values: Values; errors?: Errors },
    status = 200,
  ) => {
    const { org, appId, channel, id } = options
    const action = id ? `${base(org, appId)}/${channel}/${id}/edit` : `${base(org, appId)}/new/${channel}`
    return c.html(
      page(
        TITLE,
        c.get('session'),
        html`<h2>
            ${id ? `Edit ${CHANNEL_NAMES[channel]} campaign ${id}` : `New ${CHANNEL_NAMES[channel]} campaign`}
            in ${appId}
          </h2>
          <p>
            <a href="/dashboard/campaigns?org=${org}&app=${encodeURIComponent(appId)}">back to the list</a>
          </p>
          ${campaignForm({
            channel,
            action,
            csrf: csrfField(c.get('session')),
            values: options.values,
            errors: options.errors,
            submit: id ? 'Save campaign' : 'Create campaign',
          })}`,
      ),
      status as 200,
    )
  }

  app.get('/dashboard/campaigns/:org/:app/new/:channel', async (c) => {
    const s = await scoped(c)
    if (s.refused) return s.refused
    const channel = channelOf(c.req.param('channel'))
    if (!channel) return refusal(c, 'the channel is push or inapp', 404)
    return formPage(c, { org: s.org, appId: s.appId, channel, values: { channel } })
  })

  /** Create (no id) or update (PUT, the whole campaign) from the submitted form. */
  const save = async (c: DashboardContext, id?: number) => {
    const s = await scoped(c)
    if (s.refused) return s.refused
    const channel = channelOf(c.req.param('channel') ?? '')
    if (!channel) return refusal(c, 'the channel is push or inapp', 404)
    const form = await c.req.parseBody({ all: true })
    const values: Values = {}
    const files = new Map<string, File>()
    for (const [name, value] of Object.entries(form)) {
      if (typeof value === 'string') values[name] = value
      else if (value instanceof File && value.size > 0 && /^file_(phone|tablet)_\d+$/.test(name))
        files.set(name, value)
    }
    const options = { org: s.org, appId: s.appId, channel, id }
    if (values.action === 'add-creative')
      return formPage(c, {
        ...options,
        values: { ...values, creative_count: String(creativeCount(values) + 1) },
      })
    const built = bodyOfValues(channel, values, (name) => files.has(name))
    if (!built.ok) return formPage(c, { ...options, values, errors: built.errors }, 400)
    const path = `${apiBase(s.org, s.appId)}/${channel}/campaigns${id ? `/${id}` : ''}`
    const method = id ? 'PUT' : 'POST'
    let answer
    if (channel === 'push') answer = await s.api.call<{ id: number }>(method, path, built.body)
    else {
      const multipart = new FormData()
      multipart.set('data', JSON.stringify(built.body))
      for (const [name, file] of files) multipart.set(name, file, file.name)
      answer = await s.api.form<{ id: number }>(method, path, multipart)
    }
    if (!answer.ok)
      return formPage(
        c,
        { ...options, values, errors: campaignErrors(channel, values, answer.errors) },
        answer.status,
      )
    return after(
      c,
      `${base(s.org, s.appId)}/${channel}/${answer.body.id}`,
      `campaign ${answer.body.id} ${id ? 'saved' : 'created'}`,
    )
  }

  app.post('/dashboard/campaigns/:org/:app/new/:channel', (c) => save(c))

  const campaignId = (c: DashboardContext) => {
    const id = Number(c.req.param('id'))
    return Number.isInteger(id) && id > 0 ? id : undefined
  }

  app.get('/dashboard/campaigns/:org/:app/:channel/:id/edit', async (c) => {
    const s = await scoped(c)
    if (s.refused) return s.refused
    const channel = channelOf(c.req.param('channel'))
    const id = campaignId(c)
    if (!channel || !id) return refusal(c, 'no such campaign page', 404)
    const answer = await s.api.call<Record<string, unknown>>(
      'GET',
      `${apiBase(s.org, s.appId)}/${channel}/campaigns/${id}`,
    )
    if (!answer.ok) return refusal(c, answer.error, answer.status)
    return formPage(c, {
      org: s.org,
      appId: s.appId,
      channel,
      id,
      values: valuesOfCampaign(channel, answer.body),
    })
  })

  app.post('/dashboard/campaigns/:org/:app/:channel/:id/edit', (c) => {
    const id = campaignId(c)
    return id ? save(c, id) : refusal(c, 'no such campaign page', 404)
  })

  app.get('/dashboard/campaigns/:org/:app/:channel/:id', async (c) => {
    const s = await scoped(c)
    if (s.refused) return s.refused
    const channel = channelOf(c.req.param('channel'))
    const id = campaignId(c)
    if (!channel || !id) return refusal(c, 'no such campaign page', 404)
    const at = `${apiBase(s.org, s.appId)}/${channel}/campaigns/${id}`
    const [campaign, performance, listed, report] = await Promise.all([
      s.api.call<Record<string, unknown> & { name: string }>('GET', at),
      s.api.call<Performance>('GET', `${at}/performance`),
      s.api.call<CampaignList>('GET', `${apiBase(s.org, s.appId)}/campaigns/search?key=${id}`),
      channel === 'push'
        ? s.api.call<PushReport>(
            'GET',
            `/v2/push/${encodeURIComponent(s.appId)}/reports/${encodeURIComponent(`campaign:${id}`)}`,
          )
        : undefined,
    ])
    if (!campaign.ok) return refusal(c, campaign.error, campaign.status)
    const item = listed.ok ? listed.body.campaigns.find((x) => x.id === id) : undefined
    const here = `${base(s.org, s.appId)}/${channel}/${id}`
    const session = c.get('session')
    const creatives = (
      Array.isArray(campaign.body.creatives) ? campaign.body.creatives : [campaign.body.creatives]
    ) as {
      letter: string
      title?: string
      percent?: number
      file_phone?: string
      file_tablet?: string
      build_attributes?: { push_message?: string }
    }[]
    const body = html`${notice(c.req.query('notice'))}
      <p>
        <a href="/dashboard/campaigns?org=${s.org}&app=${encodeURIComponent(s.appId)}">back to the list</a>
      </p>
      <h2>${campaign.body.name} <small>(${CHANNEL_NAMES[channel]} campaign ${id}, app ${s.appId})</small></h2>
      <dl class="facts">
        <dt>status</dt>
        <dd data-status>${item?.status ?? String(campaign.body.status)}</dd>
        <dt>begins</dt>
        <dd>${item?.begin_date ?? 'not known yet'}</dd>
        <dt>ends</dt>
        <dd>${item?.end_date ?? '—'}</dd>
        <dt>audience</dt>
        <dd><code>${JSON.stringify(campaign.body.audiences)}</code></dd>
        <dt>schedule</dt>
        <dd><code>${JSON.stringify(campaign.body.schedule)}</code></dd>
      </dl>
      ${table(
        'Creatives',
        channel === 'push'
          ? ['variant', 'title', 'percent', 'message']
          : ['variant', 'title', 'percent', 'files'],
        creatives.map((cr) => [
          cr.letter,
          cr.title ?? '',
          cr.percent === undefined ? '100' : String(cr.percent),
          channel === 'push'
            ? (cr.build_attributes?.push_message ?? '')
            : html`${[cr.file_phone, cr.file_tablet]
                .filter((f): f is string => Boolean(f))
                .map((f) => html`<a href="${here}/files/${encodeURIComponent(f)}">${f}</a> `)}`,
        ]),
      )}
      ${
        report === undefined
          ? ''
          : report.ok
            ? html`<h3>Deliveries (push report of campaign key <code>campaign:${id}</code>)</h3>
                <dl class="facts deliveries">
                  ${(['requests', 'targeted', 'sent', 'failed', 'pending', 'opened'] as const).map(
                    (k) =>
                      html`<dt>${k}</dt>
                        <dd data-delivery="${k}">${report.body[k]}</dd>`,
                  )}
                </dl>`
            : html`<p class="empty" data-delivery="none">
                Deliveries: ${report.status === 404 ? 'nothing sent yet' : report.error}
              </p>`
      }
      ${
        performance.ok
          ? table(
              `Performance per variant (conversion: ${performance.body.conversion_event ?? 'none set'}, within ${performance.body.conversion_window_days} days)`,
              [
                'variant',
                'assigned',
                'targeted',
                channel === 'push' ? 'sent' : 'clicks',
                'conversions',
                'conversion rate',
                'lift',
              ],
              performance.body.variants.map((v) => [
                v.variant,
                String(v.assigned),
                String(v.targeted),
                String(v.sent),
                String(v.conversions),
                `${(v.conversion_rate * 100).toFixed(2)}%`,
                v.lift === null ? '—' : `${(v.lift * 100).toFixed(1)}%`,
              ]),
            )
          : html`<p class="error" role="alert">${performance.error}</p>`
      }
      <div class="actions">
        <a href="${here}/edit">Edit</a>
        <form method="post" action="${here}/archive" class="inline">
          ${csrfField(session)}<button type="submit">Archive</button>
        </form>
        <form method="post" action="${here}/delete" class="inline">
          ${csrfField(session)}<button type="submit">Delete</button>
        </form>
      </div>`
    return c.html(page(TITLE, session, body))
  })

  app.post('/dashboard/campaigns/:org/:app/:channel/:id/archive', async (c) => {
    const s = await scoped(c)
    if (s.refused) return s.refused
    const { channel, id } = c.req.param()
    const answer = await s.api.call('PUT', `${apiBase(s.org, s.appId)}/${channel}/campaigns/${id}/archive`)
    if (!answer.ok) return refusal(c, answer.error, answer.status)
    return after(c, `${base(s.org, s.appId)}/${channel}/${id}`, `campaign ${id} archived`)
  })

  app.post('/dashboard/campaigns/:org/:app/:channel/:id/delete', async (c) => {
    const s = await scoped(c)
    if (s.refused) return s.refused
    const { channel, id } = c.req.param()
    const answer = await s.api.call('DELETE', `${apiBase(s.org, s.appId)}/${channel}/campaigns/${id}`)
    if (!answer.ok) return refusal(c, answer.error, answer.status)
    return after(
      c,
      `/dashboard/campaigns?org=${s.org}&app=${encodeURIComponent(s.appId)}`,
      `campaign ${id} deleted`,
    )
  })

  // An in-app creative's file, as a download: it is the campaign's content, never run as a page of
  // the dashboard's origin.
  app.get('/dashboard/campaigns/:org/:app/inapp/:id/files/:name', async (c) => {
    const s = await scoped(c)
    if (s.refused) return s.refused
    const { id, name } = c.req.param()
    const res = await s.api.raw(
      `${apiBase(s.org, s.appId)}/inapp/campaigns/${encodeURIComponent(id)}/files/${encodeURIComponent(name)}`,
    )
    if (!res.ok) return refusal(c, `the campaigns API answered ${res.status}`, res.status)
    return new Response(res.body, {
      headers: {
        'Content-Type': 'application/octet-stream',
        'Content-Disposition': `attachment; filename="${name.replace(/[^A-Za-z0-9._-]/g, '_')}"`,
      },
    })
  })
}

function filterForm(org: number, appId: string, q: Record<string, string>, errors: Errors | undefined) {
  const opt = (name: string, options: readonly (readonly [string, string])[]) =>
    html`<div class="field">
      <label for="q-${name}">${name.replace('_', ' ')}</label>
      <select id="q-${name}" name="${name}">
        ${options.map(([v, t]) => html`<option value="${v}" ${q[name] === v ? html`selected` : ''}>${t}</option>`)}
      </select>
      ${errors?.[name] ? html`<p class="error" role="alert">${errors[name].join('; ')}</p>` : ''}
    </div>`
  const any = ['', 'any'] as const
  return html`<form method="get" action="/dashboard/campaigns" class="card row filters">
    <input type="hidden" name="org" value="${org}" />
    <input type="hidden" name="app" value="${appId}" />
    ${formErrors(errors)}
    <div class="field">
      <label for="q-key">Search (id or part of the name)</label>
      <input id="q-key" name="key" type="search" value="${q.key ?? ''}" />
    </div>
    ${opt('channel', [any, ...LIST_CHANNELS.map((c) => [c, c] as const)])}
    ${opt('status', [any, ...SEARCH_STATUSES.map((s) => [s, s] as const)])}
    ${opt('recurring', [any, ['1', 'recurring only'], ['2', 'one-time only']])}
    ${opt('is_archived', [any, ['0', 'not archived'], ['1', 'archived']])}
    ${opt('sort_by', [
      ['', 'created'],
      ['name', 'name'],
    ])}
    ${opt('sort_order', [
      ['', 'newest first'],
      ['asc', 'ascending'],
    ])}
    <div class="field">
      <label for="q-per_page">per page</label>
      <input
        id="q-per_page"
        name="per_page"
        type="number"
        min="1"
        max="1000"
        value="${q.per_page ?? ''}"
        size="4"
      />
      ${errors?.per_page ? html`<p class="error" role="alert">${errors.per_page.join('; ')}</p>` : ''}
    </div>
    <button type="submit">Filter</button>
  </form>`
}

function campaignTable(base: string, list: CampaignList, q: Record<string, string>) {
  const pageNumber = Number(q.page_number) || 1
  const perPage = Number(q.per_page) || 100
  const link = (n: number) => `?${new URLSearchParams({ ...q, page_number: String(n) }).toString()}`
  return html`${table(
      `Campaigns: ${list.records_count} of ${list.total_records}`,
      ['id', 'name', 'channel', 'status', 'begins', 'sends', 'open rate', ''],
      list.campaigns.map((x) => {
        const channel = x.message_type === 'push' ? 'push' : 'inapp'
        return [
          String(x.id),
          x.name,
          x.message_type,
          html`<span data-campaign-status="${x.id}">${x.status}</span>`,
          x.begin_date ?? '—',
          String(x.sends),
          x.open_rate,
          html`<a href="${base}/${channel}/${x.id}" aria-label="open campaign ${x.id}">open</a>`,
        ]
      }),
    )}
    <p class="pages">
      ${pageNumber > 1 ? html`<a href="${link(pageNumber - 1)}" rel="prev">previous page</a>` : ''}
      ${pageNumber * perPage < list.total_records ? html`<a href="${link(pageNumber + 1)}" rel="next">next page</a>` : ''}
    </p>`
}
