import { html } from 'hono/html'
import {
  analyticsQueries,
  analyticsRange,
  chartOf,
  curlOf,
  type AnalyticsQuery,
  type DateRange,
} from '../analytics-queries.ts'
import type { Answer } from '../api.ts'
import { pickApp, pickerFields } from '../app-picker.ts'
import { orgApi, type DashboardApp, type DashboardDeps } from '../context.ts'
import { formErrors, input, page, table } from '../layout.ts'

interface ResultSet {
  results: Record<string, unknown>[]
  query: { time_zone: string }
  truncated: boolean
}

/**
 * Analytics of one app over a date range, every number from the Query API (`POST /v1/query` with
 * the org's key): users, sessions and occurrences by day, top events, users by country and by app
 * version, each drawn with uPlot (assets/analytics.js), its rows in a table, and its request shown
 * as a curl command to copy.
 */
export function registerAnalytics(app: DashboardApp, deps: DashboardDeps) {
  app.get('/dashboard/analytics', async (c) => {
    const session = c.get('session')
    const picked = await pickApp(deps, c)
    const { range, errors } = analyticsRange({ from: c.req.query('from'), to: c.req.query('to') }, Date.now())
    const answers: { query: AnalyticsQuery; answer: Answer<ResultSet> }[] = []
    let status = 200
    if (picked.orgId && picked.appId && Object.keys(errors).length === 0) {
      const keyed = await orgApi(deps, c, picked.orgId)
      if (!keyed.ok) {
        errors[''] = [keyed.error]
        status = keyed.status
      } else {
        // One after another: the Query API runs one request at a time per key.
        for (const query of analyticsQueries(picked.appId, range)) {
          const answer = await keyed.api.call<ResultSet>('POST', '/v1/query', query.body)
          answers.push({ query, answer })
          if (!answer.ok) {
            // The app's refusal names the app: shown under its select; the rest at the top.
            ;(/\bapp\b/.test(answer.error) ? (errors.app ??= []) : (errors[''] ??= [])).push(answer.error)
            status = answer.status
            break
          }
        }
      }
    }
    const origin = new URL(c.req.url).origin
    const zone = answers.find((a) => a.answer.ok)?.answer
    const body = html`<link rel="stylesheet" href="/dashboard/assets/uPlot.min.css" />
      <form method="get" action="/dashboard/analytics" class="card row filters">
        ${formErrors(errors)} ${pickerFields(picked, errors)}
        ${input('From', 'from', { type: 'date', value: range.from, errors })}
        ${input('To', 'to', { type: 'date', value: range.to, errors })}
        <button type="submit">Show</button>
      </form>
      ${
        picked.orgId && picked.apps.length === 0 && !picked.error
          ? html`<p class="empty">This org has no app yet.</p>`
          : ''
      }
      ${zone?.ok ? html`<p class="muted">Days in the app's time zone: <strong data-time-zone>${zone.body.query.time_zone}</strong>.</p>` : ''}
      ${answers.map(({ query, answer }) => (answer.ok ? panel(query, answer.body, range, origin) : ''))}`
    return c.html(page('Analytics', session, body, ['uPlot.iife.min.js', 'analytics.js']), status as 200)
  })
}

function panel(query: AnalyticsQuery, answer: ResultSet, range: DateRange, origin: string) {
  const chart = chartOf(query, answer.results, range)
  const queryId = `query-${query.id}`
  const rows = answer.results.map((r) => [
    r[query.dimension] === null ? '(none)' : String(r[query.dimension]),
    ...query.metrics.map((m) => (r[m] === null || r[m] === undefined ? '' : String(r[m] as number))),
  ])
  return html`<section class="panel" aria-labelledby="title-${query.id}">
    <h2 id="title-${query.id}">${query.title}</h2>
    ${
      chart.labels.length === 0
        ? ''
        : html`<div
            class="chart"
            id="chart-${query.id}"
            data-chart="${JSON.stringify(chart)}"
            role="img"
            aria-label="${query.title}: chart of the table below"
          ></div>`
    }
    <div data-table="${query.id}">
      ${table(query.dimension === 'day' ? `${query.title} (days with data)` : query.title, [query.dimension, ...query.metrics], rows)}
    </div>
    ${answer.truncated ? html`<p class="muted">Only the first rows are shown.</p>` : ''}
    <details class="query">
      <summary>Query</summary>
      <pre class="wrap" id="${queryId}">${curlOf(origin, query.body)}</pre>
      <button type="button" data-copy="${queryId}">Copy the query</button>
    </details>
  </section>`
}
