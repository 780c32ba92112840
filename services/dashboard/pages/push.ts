import { html } from 'hono/html'
import type { CampaignReport } from '../../../pipelines/push/reports.ts'
import { errorsByField } from '../api.ts'
import {
  after,
  field,
  orgApi,
  type DashboardApp,
  type DashboardContext,
  type DashboardDeps,
} from '../context.ts'
import { csrfField, formErrors, input, notice, page, table } from '../layout.ts'
import { pickOrgApp } from './org-app.ts'

const TITLE = 'Push'
/** The campaign key a test push carries unless another is given: its report gathers the tests. */
export const TEST_CAMPAIGN_KEY = 'dashboard-test'

/** The push API's answer for a campaign key. */
type Report = CampaignReport

/** The test form's fields, named by the paths the push API gives in its errors. */
const FIELDS = [
  'campaign_key',
  'messages[0].target',
  'messages[0].alert.title',
  'messages[0].alert.body',
  'messages[0].alert',
  'messages[0].ios.extra.ll_deep_link_url',
]

type Errors = Record<string, string[]> | undefined

/**
 * Push through the push API as the org (POST /v2/push/:app_id): a test push to one customer
 * (target type customer_id), and the report of a campaign key (GET /v2/push/:app_id/reports/:key)
 * — the test pushes', a campaign's (`campaign:<id>`), or any key the org's own requests carry.
 */
export function registerPush(app: DashboardApp, deps: DashboardDeps) {
  const render = async (
    c: DashboardContext,
    errors?: Errors,
    values: Record<string, string> = {},
    status = 200,
    chosen: { org?: string; app?: string } = {},
  ) => {
    const session = c.get('session')
    const picked = await pickOrgApp(deps, c, '/dashboard/push', chosen)
    const key = c.req.query('key')?.trim() || ''
    let reportPart: unknown = ''
    let keysPart: unknown = ''
    const org = picked.orgId
    const appId = picked.appId
    if (org && appId) {
      const scoped = await orgApi(deps, c, org)
      if (!scoped.ok) reportPart = html`<p class="error" role="alert">${scoped.error}</p>`
      else {
        const app = encodeURIComponent(appId)
        const [report, campaigns] = await Promise.all([
          key
            ? scoped.api.call<Report>('GET', `/v2/push/${app}/reports/${encodeURIComponent(key)}`)
            : undefined,
          scoped.api.call<{ campaigns: { id: number; name: string }[] }>(
            'GET',
            `/api/v6/orgs/${org}/apps/${app}/campaigns?channel=push&per_page=20`,
          ),
        ])
        const link = (k: string) =>
          `/dashboard/push?${new URLSearchParams({ org: String(org), app: appId, key: k }).toString()}`
        keysPart = html`<p class="keys">
          Reports: <a href="${link(TEST_CAMPAIGN_KEY)}">${TEST_CAMPAIGN_KEY}</a>
          ${campaigns.ok ? campaigns.body.campaigns.map((x) => html` · <a href="${link(`campaign:${x.id}`)}">campaign:${x.id}</a> (${x.name})`) : ''}
        </p>`
        reportPart = !report
          ? ''
          : report.ok
            ? table(
                `Report of campaign key ${key}`,
                [
                  'requests',
                  'targeted',
                  'sent',
                  'failed',
                  'pending',
                  'opened',
                  'first request',
                  'last request',
                ],
                [
                  [
                    ...(['requests', 'targeted', 'sent', 'failed', 'pending', 'opened'] as const).map(
                      (k) => html`<span data-report="${k}">${report.body[k]}</span>`,
                    ),
                    report.body.first_request_at,
                    report.body.last_request_at,
                  ],
                ],
              )
            : html`<p class="error" role="alert" data-report="none">${report.error}</p>`
      }
    }
    const body = html`${notice(c.req.query('notice'))} ${picked.form}
    ${
      org && appId
        ? html`<form
              method="post"
              action="/dashboard/push/${org}/${encodeURIComponent(appId)}/test"
              class="card"
            >
              <h2>Send a test push</h2>
              ${csrfField(session)} ${formErrors(errors)}
              ${input('Customer id', 'messages[0].target', { id: 'push-customer', value: values['messages[0].target'] ?? '', errors, required: true })}
              ${input('Title (optional)', 'messages[0].alert.title', { id: 'push-title', value: values['messages[0].alert.title'] ?? '', errors })}
              ${input('Message (empty: a silent push)', 'messages[0].alert.body', { id: 'push-body', value: values['messages[0].alert.body'] ?? '', errors })}
              ${input('Deep link URL (optional)', 'messages[0].ios.extra.ll_deep_link_url', { id: 'push-link', value: values['messages[0].ios.extra.ll_deep_link_url'] ?? '', errors })}
              ${input('Campaign key (its report gathers these pushes)', 'campaign_key', { id: 'push-key', value: values.campaign_key ?? TEST_CAMPAIGN_KEY, errors })}
              <div class="field">
                <label class="check"
                  ><input type="checkbox" name="all_devices" ${values.all_devices ? html`checked` : ''} />
                  Every device of the customer (else its most recent)</label
                >
              </div>
              <button type="submit">Send test push</button>
            </form>
            <h2>Reports per campaign key</h2>
            ${keysPart}
            <form method="get" action="/dashboard/push" class="card row">
              <input type="hidden" name="org" value="${org}" />
              <input type="hidden" name="app" value="${appId}" />
              <label for="report-key">Campaign key</label>
              <input id="report-key" name="key" value="${key}" />
              <button type="submit">Show report</button>
            </form>
            ${reportPart}`
        : html`<p>Choose an org and an app.</p>`
    }`
    return c.html(page(TITLE, session, body), status as 200)
  }

  app.get('/dashboard/push', (c) => render(c))

  app.post('/dashboard/push/:org/:app/test', async (c) => {
    const org = Number(c.req.param('org'))
    const appId = c.req.param('app')
    const chosen = { org: c.req.param('org'), app: appId }
    const form = await c.req.parseBody({ all: true })
    const values = Object.fromEntries(FIELDS.map((f) => [f, field(form, f)]))
    if (form.all_devices) values.all_devices = 'on'
    const scoped = await orgApi(deps, c, org)
    if (!scoped.ok) return render(c, { '': [scoped.error] }, values, scoped.status, chosen)
    const title = values['messages[0].alert.title'] ?? ''
    const text = values['messages[0].alert.body'] ?? ''
    const key = values.campaign_key ?? ''
    // The campaign key rides in the extras too, so the app can send it back with its Push Opened
    // event and the report counts the open (docs/push.md, "Reports").
    const extra: Record<string, string> = key ? { campaign_key: key } : {}
    if (values['messages[0].ios.extra.ll_deep_link_url'])
      extra.ll_deep_link_url = values['messages[0].ios.extra.ll_deep_link_url']
    const answer = await scoped.api.call<{ request_id: string }>(
      'POST',
      `/v2/push/${encodeURIComponent(appId)}`,
      {
        target_type: 'customer_id',
        campaign_key: key || null,
        all_devices: Boolean(form.all_devices),
        messages: [
          {
            target: values['messages[0].target'],
            alert: title ? { title, body: text } : text,
            ios: { extra },
            android: { extra },
          },
        ],
      },
    )
    if (!answer.ok) {
      // Options for both platforms: the API names the iOS block's paths; both come from one field.
      const errors = answer.errors.map((e) =>
        e.replace(/^messages\[0\]\.android\.extra\./, 'messages[0].ios.extra.'),
      )
      return render(c, errorsByField(errors, FIELDS), values, answer.status, chosen)
    }
    const query = new URLSearchParams({ org: String(org), app: appId, ...(key && { key }) })
    return after(
      c,
      `/dashboard/push?${query.toString()}`,
      `test push queued: request ${answer.body.request_id}`,
    )
  })
}
