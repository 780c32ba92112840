import { html } from 'hono/html'
import { apiOf, type DashboardApp, type DashboardContext, type DashboardDeps } from '../context.ts'
import { page, table } from '../layout.ts'
import { CounterRates, parseMetrics } from '../metrics-text.ts'

interface JobRun {
  job: string
  period_start: string
  ran_at: string
  status: number
  error?: string
}

const rate = (v: number | undefined) => (v === undefined ? '…' : v < 10 ? v.toFixed(2) : v.toFixed(0))
const ago = (iso: string, now: number) => `${Math.max(0, Math.round((now - Date.parse(iso)) / 1000))} s ago`

/**
 * Health: this edge's counters as rates (uploads accepted, events made queryable and rejected per
 * second), consumer lag per pipeline, readiness, dead letters and scheduler jobs, from /metrics,
 * /readyz and the admin API; the panel reloads itself every 2 s (htmx).
 */
export function registerHealth(app: DashboardApp, deps: DashboardDeps) {
  const rates = new CounterRates()

  const panel = async (c: DashboardContext) => {
    const api = apiOf(deps, c)
    const session = c.get('session')
    const now = Date.now()
    const [metricsText, ready, jobs, letters] = await Promise.all([
      api.raw('/metrics').then((r) => r.text()),
      api.call<{ status: string; checks: Record<string, boolean> }>('GET', '/readyz'),
      session.who.kind === 'admin' ? api.call<JobRun[]>('GET', '/admin/v1/jobs') : undefined,
      session.who.kind === 'admin' ? api.call<unknown[]>('GET', '/admin/v1/dead-letters?limit=1000') : undefined,
    ])
    const samples = parseMetrics(metricsText)
    const { totals, rates: perSecond } = rates.update(samples, now)
    const lags = samples
      .filter((s) => s.name === 'sluice_consumer_lag_records')
      .map((s) => [s.labels.group ?? '', s.labels.topic ?? '', String(s.value)])
    return html`<section id="health-panel" hx-get="/dashboard/health/panel" hx-trigger="every 2s" hx-swap="outerHTML" aria-live="polite">
<div class="tiles">
  <div class="tile"><span class="label">uploads accepted / s</span><span class="value" data-metric="uploads-rate">${rate(perSecond?.uploadsAccepted)}</span><span class="total">total <span data-metric="uploads-total">${totals.uploadsAccepted}</span></span></div>
  <div class="tile"><span class="label">events made queryable / s</span><span class="value" data-metric="stored-rate">${rate(perSecond?.eventsStored)}</span><span class="total">total <span data-metric="stored-total">${totals.eventsStored}</span></span></div>
  <div class="tile"><span class="label">events rejected / s</span><span class="value" data-metric="rejected-rate">${rate(perSecond?.eventsRejected)}</span><span class="total">total <span data-metric="rejected-total">${totals.eventsRejected}</span></span></div>
  <div class="tile"><span class="label">dead letters</span><span class="value" data-metric="dead-letters">${letters?.ok ? letters.body.length : totals.deadLetters}</span><span class="total">${session.who.kind === 'admin' ? html`<a href="/dashboard/dead-letters">inspect</a>` : 'counted by this edge'}</span></div>
</div>
<p>Readiness: <strong data-metric="ready">${ready.ok ? 'ready' : 'not ready'}</strong>
${ready.ok ? Object.entries(ready.body.checks).map(([k, v]) => html` · ${k} ${v ? 'up' : 'down'}`) : html` · ${ready.error}`}
· sampled ${new Date(now).toISOString().slice(11, 19)} UTC</p>
${table('Consumer lag per pipeline (records behind; freshness)', ['consumer group', 'topic', 'lag'], lags)}
${jobs?.ok
  ? table(
      'Scheduler jobs (latest run)',
      ['job', 'period', 'ran', 'status'],
      jobs.body.map((j) => [j.job, j.period_start, ago(j.ran_at, now), j.status === 200 ? 'ok' : `failed: ${j.error ?? j.status}`]),
    )
  : ''}
</section>`
  }

  app.get('/dashboard/health', async (c) => c.html(page('Health', c.get('session'), await panel(c))))
  app.get('/dashboard/health/panel', async (c) => c.html(await panel(c)))
}
