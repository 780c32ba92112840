import { html } from 'hono/html'
import { after, apiOf, type DashboardApp, type DashboardContext, type DashboardDeps } from '../context.ts'
import { csrfField, notice, page, table } from '../layout.ts'

interface DeadLetter {
  id: string
  stage: string
  topic: string
  partition: number
  offset: string
  key: string | null
  headers: Record<string, string>
  error: string
  attempts: number
  dead_at: string
  replayed_at: string | null
  value_bytes: number
  value: string | null
  preview: string | null
}

const refused = (c: DashboardContext) =>
  c.html(page('Dead letters', c.get('session'), html`<p class="error" role="alert">operators only (the admin token)</p>`), 403)

/** Dead letters through the admin API: list (by stage), inspect, replay onto their topic. */
export function registerDeadLetters(app: DashboardApp, deps: DashboardDeps) {
  app.get('/dashboard/dead-letters', async (c) => {
    if (c.get('session').who.kind !== 'admin') return refused(c)
    const stage = c.req.query('stage') ?? ''
    const query = new URLSearchParams({ limit: '200', ...(stage && { stage }) })
    const answer = await apiOf(deps, c).call<DeadLetter[]>('GET', `/admin/v1/dead-letters?${query}`)
    const body = html`${notice(c.req.query('notice'))}
<form method="get" action="/dashboard/dead-letters" class="card row">
  <label for="stage">Stage</label>
  <input id="stage" name="stage" value="${stage}" placeholder="every stage">
  <button type="submit">Filter</button>
</form>
${answer.ok
  ? table(
      'Dead letters, newest first',
      ['dead at', 'stage', 'error', 'record', 'replayed', ''],
      answer.body.map((d) => [
        d.dead_at,
        d.stage,
        d.error.slice(0, 160),
        `${d.topic} #${d.partition}@${d.offset} (${d.value_bytes} B)`,
        d.replayed_at ?? 'no',
        html`<a href="/dashboard/dead-letters/${d.id}">inspect</a>`,
      ]),
    )
  : html`<p class="error" role="alert">${answer.error}</p>`}`
    return c.html(page('Dead letters', c.get('session'), body))
  })

  app.get('/dashboard/dead-letters/:id', async (c) => {
    if (c.get('session').who.kind !== 'admin') return refused(c)
    const answer = await apiOf(deps, c).call<DeadLetter>('GET', `/admin/v1/dead-letters/${encodeURIComponent(c.req.param('id'))}`)
    if (!answer.ok)
      return c.html(page('Dead letter', c.get('session'), html`<p class="error" role="alert">${answer.error}</p>`), answer.status as 404)
    const d = answer.body
    const body = html`<dl class="facts">
<dt>id</dt><dd><code>${d.id}</code></dd>
<dt>stage</dt><dd>${d.stage}</dd>
<dt>record</dt><dd>${d.topic}, partition ${d.partition}, offset ${d.offset}, key ${d.key ?? '(none)'}</dd>
<dt>attempts</dt><dd>${d.attempts}</dd>
<dt>dead at</dt><dd>${d.dead_at}</dd>
<dt>replayed at</dt><dd data-replayed>${d.replayed_at ?? 'never'}</dd>
<dt>headers</dt><dd><code>${JSON.stringify(d.headers)}</code></dd>
</dl>
<h2>Error</h2>
<pre class="wrap" data-error>${d.error}</pre>
<h2>Value (${d.value_bytes} bytes)</h2>
<pre class="wrap">${d.preview ?? `(binary; base64) ${d.value ?? ''}`}</pre>
<form method="post" action="/dashboard/dead-letters/${d.id}/replay" class="card">
  ${csrfField(c.get('session'))}
  <p>Replay produces the record again onto its topic and partition, with its key and headers (after a fix).</p>
  <button type="submit">Replay</button>
</form>`
    return c.html(page('Dead letter', c.get('session'), body))
  })

  app.post('/dashboard/dead-letters/:id/replay', async (c) => {
    if (c.get('session').who.kind !== 'admin') return refused(c)
    const id = c.req.param('id')
    const answer = await apiOf(deps, c).call<{ replayed_at: string }>('POST', `/admin/v1/dead-letters/${encodeURIComponent(id)}/replay`)
    if (!answer.ok)
      return c.html(page('Dead letter', c.get('session'), html`<p class="error" role="alert">${answer.error}</p>`), answer.status as 404)
    return after(c, '/dashboard/dead-letters', `dead letter ${id} replayed at ${answer.body.replayed_at}`)
  })
}
