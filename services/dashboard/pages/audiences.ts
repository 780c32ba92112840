import { html } from 'hono/html'
import { pickApp, pickerFields, type PickedApp } from '../app-picker.ts'
import {
  COUNT_OPERATORS,
  CRITERION_OPERATORS,
  errorsOfForm,
  fieldNames,
  FILTER_OPERATORS,
  formOfPost,
  formOfRules,
  RULE_TYPES,
  rulesOfForm,
  type AudienceForm,
} from '../audience-form.ts'
import type { DashboardApi } from '../api.ts'
import { after, orgApi, type DashboardApp, type DashboardContext, type DashboardDeps } from '../context.ts'
import { csrfField, notice, page, table, type Fragment } from '../layout.ts'

interface Counts {
  user_count: number
  has_push: number
  seen_last_thirty: number
}
interface ListItem {
  id: number
  name: string
  target_rules: unknown
  segmentation_count: Counts & { updated_at: string | null }
}
type Errors = Record<string, string[]>

const TITLE = 'Audiences'
const idOf = (name: string) => `f-${name.replace(/[^A-Za-z0-9]+/g, '-')}`

/**
 * Audiences of an app through the audience API (docs/audiences.md): the list with counts, a builder
 * for behavior rules and profile criteria whose count follows the rules as they are typed (htmx
 * posts the form to `POST …/audiences/preview`), edit (PUT) and delete. The API's messages show
 * under the inputs they name.
 */
export function registerAudiences(app: DashboardApp, deps: DashboardDeps) {
  /** The org's key for the audience API, with the org and app picked; a page of refusal otherwise. */
  const context = async (c: DashboardContext) => {
    const picked = await pickApp(deps, c)
    const keyed = picked.orgId && picked.appId ? await orgApi(deps, c, picked.orgId) : undefined
    if (keyed && !keyed.ok) picked.error = keyed.error
    const base = picked.appId
      ? `/api/v6/orgs/${picked.orgId}/apps/${encodeURIComponent(picked.appId)}/audiences`
      : ''
    const here = `org=${picked.orgId ?? ''}&app=${encodeURIComponent(picked.appId ?? '')}`
    return { picked, api: keyed?.ok ? keyed.api : undefined, base, here }
  }
  type Ctx = Awaited<ReturnType<typeof context>>

  const pickerForm = (picked: PickedApp, action: string) =>
    html`<form method="get" action="${action}" class="card row filters">
      ${pickerFields(picked)}
      <button type="submit">Show</button>
    </form>`

  app.get('/dashboard/audiences', async (c) => {
    const session = c.get('session')
    const ctx = await context(c)
    const listed = ctx.api ? await ctx.api.call<ListItem[]>('GET', ctx.base) : undefined
    const body = html`${notice(c.req.query('notice'))} ${pickerForm(ctx.picked, '/dashboard/audiences')}
    ${
      listed && !listed.ok
        ? html`<p class="error" role="alert">${listed.error}</p>`
        : listed
          ? html`${table(
                `Audiences of ${ctx.picked.appId}`,
                ['id', 'name', 'installs', 'with push', 'seen in 30 days', 'counted at', ''],
                listed.body.map((a) => [
                  String(a.id),
                  a.name,
                  html`<span data-count="${a.id}">${a.segmentation_count.user_count}</span>`,
                  String(a.segmentation_count.has_push),
                  String(a.segmentation_count.seen_last_thirty),
                  a.segmentation_count.updated_at ?? 'not yet',
                  html`<a href="/dashboard/audiences/${a.id}?${ctx.here}" aria-label="Edit ${a.name}">edit</a>
                    <form
                      method="post"
                      action="/dashboard/audiences/${a.id}/delete?${ctx.here}"
                      class="inline"
                    >
                      ${csrfField(session)}<button type="submit" aria-label="Delete ${a.name}">Delete</button>
                    </form>`,
                ]),
              )}
              <p><a href="/dashboard/audiences/new?${ctx.here}">New audience</a></p>`
          : ''
    }`
    return c.html(page(TITLE, session, body))
  })

  const builder = (
    c: DashboardContext,
    ctx: Ctx,
    form: AudienceForm,
    options: { id?: number; errors?: Errors; status?: number },
  ) => {
    const session = c.get('session')
    const errors = options.errors ?? {}
    const action = options.id
      ? `/dashboard/audiences/${options.id}?${ctx.here}`
      : `/dashboard/audiences?${ctx.here}`
    const body = html`<p>
        <a href="/dashboard/audiences?${ctx.here}">All audiences of ${ctx.picked.appId}</a>
      </p>
      <form
        method="post"
        action="${action}"
        class="card builder"
        hx-post="/dashboard/audiences/count?${ctx.here}"
        hx-trigger="load, input delay:500ms, change delay:300ms"
        hx-target="#live-count"
        hx-swap="innerHTML"
        hx-sync="this:replace"
      >
        <h2>${options.id ? `Audience ${options.id}` : 'New audience'}</h2>
        ${csrfField(session)}
        <div id="form-errors">${topErrors(errors[''])}</div>
        <p class="live">Members now: <output id="live-count" aria-live="polite">…</output></p>
        ${textField('Name', 'name', form.name, errors)}
        ${selectField('Behavior and profile', 'behavior_profile_operator', form.behavior_profile_operator, ['and', 'or'], errors)}
        <fieldset>
          <legend>Behavior</legend>
          <div class="grid">
            ${textField('Window (days)', 'behavior.days', form.days, errors, 'number')}
            ${selectField('Rules combine with', 'behavior.behavior_rule_operator', form.behavior_rule_operator, ['and', 'or'], errors)}
          </div>
          ${form.rules.map((rule, i) => {
            const p = `behavior.rules[${i}]`
            return html`<fieldset class="rule">
              <legend>Rule ${i + 1}</legend>
              <div class="grid">
                ${selectField('Kind', `${p}.rule_type`, rule.rule_type, [['', 'no rule'], ...RULE_TYPES.map((t) => [t, t] as const)], errors)}
                ${textField('Event name', `${p}.event_name`, rule.event_name, errors)}
                ${selectField('Count is', `${p}.count_operator`, rule.count_operator, COUNT_OPERATORS, errors)}
                ${textField('Count (empty: at least one)', `${p}.count`, rule.count, errors, 'number')}
                ${textField('From days ago', `${p}.neg_time_window.from`, rule.days_from, errors, 'number')}
                ${textField('To days ago', `${p}.neg_time_window.to`, rule.days_to, errors, 'number')}
              </div>
              <input type="hidden" name="${p}.conditions.operator" value="${rule.filter_operator}" />
              ${rule.filters.map((f, j) => {
                const q = `${p}.conditions.filters[${j}]`
                return html`<div class="grid filter">
                  ${textField(`Filter ${j + 1}: dimension or attribute`, `${q}.dimension_name`, f.dimension_name, errors)}
                  ${selectField(`Filter ${j + 1}: operator`, `${q}.operator`, f.operator, FILTER_OPERATORS, errors)}
                  ${textField(`Filter ${j + 1}: values (comma-separated)`, `${q}.values`, f.values, errors)}
                </div>`
              })}
            </fieldset>`
          })}
        </fieldset>
        <fieldset>
          <legend>Profile</legend>
          ${selectField('Criteria combine with', 'profile.operator', form.profile_operator, ['and', 'or'], errors)}
          ${form.criteria.map((cr, i) => {
            const p = `profile.criteria[${i}]`
            return html`<fieldset class="rule">
              <legend>Criterion ${i + 1}</legend>
              <div class="grid">
                ${textField('Attribute', `${p}.key`, cr.key, errors)}
                ${selectField('Profile', `${p}.scope`, cr.scope, ['app', 'org'], errors)}
                ${selectField('Operator', `${p}.operator`, cr.operator, CRITERION_OPERATORS, errors)}
                ${textField('Values (comma-separated)', `${p}.values`, cr.values, errors)}
              </div>
            </fieldset>`
          })}
        </fieldset>
        <button type="submit">${options.id ? 'Save' : 'Create audience'}</button>
      </form>`
    return c.html(page(TITLE, session, body), (options.status ?? 200) as 200)
  }

  app.get('/dashboard/audiences/new', async (c) => {
    const ctx = await context(c)
    if (!ctx.api) return c.redirect(`/dashboard/audiences?${ctx.here}`, 302)
    return builder(c, ctx, formOfRules('', {}), {})
  })

  // The live count: the form's rules through the preview route; its messages under their inputs.
  app.post('/dashboard/audiences/count', async (c) => {
    const ctx = await context(c)
    const form = formOfPost(await c.req.parseBody())
    const built = rulesOfForm(form)
    const fields = fieldNames(form)
    if (!ctx.api)
      return c.html(countFragment(undefined, { '': [ctx.picked.error ?? 'choose an app'] }, fields))
    const answer = await ctx.api.call<Counts>('POST', `${ctx.base}/preview`, { target_rules: built.rules })
    if (!answer.ok)
      return c.html(countFragment(undefined, errorsOfForm(answer.errors, fields, built), fields))
    return c.html(countFragment(answer.body, {}, fields))
  })

  const save = async (c: DashboardContext, id?: number) => {
    const ctx = await context(c)
    if (!ctx.api) return c.redirect(`/dashboard/audiences?${ctx.here}`, 303)
    const form = formOfPost(await c.req.parseBody())
    const built = rulesOfForm(form)
    const answer = await ctx.api.call<{ id: number; segmentation_count: Counts }>(
      id ? 'PUT' : 'POST',
      id ? `${ctx.base}/${id}` : ctx.base,
      { name: form.name, target_rules: built.rules },
    )
    if (!answer.ok)
      return builder(c, ctx, form, {
        ...(id !== undefined && { id }),
        errors: errorsOfForm(answer.errors, fieldNames(form), built),
        status: answer.status,
      })
    const n = answer.body.segmentation_count.user_count
    return after(
      c,
      `/dashboard/audiences?${ctx.here}`,
      `audience ${answer.body.id} ${id ? 'saved' : 'created'}: ${n} install${n === 1 ? '' : 's'}`,
    )
  }
  app.post('/dashboard/audiences', (c) => save(c))

  app.get('/dashboard/audiences/:id', async (c) => {
    const ctx = await context(c)
    const id = Number(c.req.param('id'))
    const found = ctx.api ? await audienceOf(ctx.api, ctx.base, id) : undefined
    if (!found)
      return c.html(
        page(
          TITLE,
          c.get('session'),
          html`<p class="error" role="alert">audience ${c.req.param('id')} not found</p>`,
        ),
        404,
      )
    return builder(c, ctx, formOfRules(found.name, found.target_rules), { id })
  })
  app.post('/dashboard/audiences/:id', (c) => save(c, Number(c.req.param('id'))))

  app.post('/dashboard/audiences/:id/delete', async (c) => {
    const ctx = await context(c)
    const id = c.req.param('id')
    const answer = ctx.api ? await ctx.api.call('DELETE', `${ctx.base}/${encodeURIComponent(id)}`) : undefined
    if (!answer?.ok)
      return c.html(
        page(
          TITLE,
          c.get('session'),
          html`<p class="error" role="alert">${answer?.error ?? ctx.picked.error}</p>`,
        ),
        (answer?.status ?? 400) as 400,
      )
    return after(c, `/dashboard/audiences?${ctx.here}`, `audience ${id} deleted`)
  })
}

/** The audience as listed (name, rules as given), or undefined when the API does not know it. */
async function audienceOf(api: DashboardApi, base: string, id: number) {
  const listed = await api.call<ListItem[]>('GET', base)
  return listed.ok ? listed.body.find((a) => a.id === id) : undefined
}

/** The live count, and every input's messages swapped in beside it (htmx out-of-band). */
function countFragment(counts: Counts | undefined, errors: Errors, fields: readonly string[]) {
  return html`${
      counts
        ? html`<strong data-live-count>${counts.user_count}</strong> installs, ${counts.has_push} with push,
            ${counts.seen_last_thirty} seen in the last 30 days`
        : html`<span data-live-count-error>the rules have errors</span>`
    }
    <div id="form-errors" hx-swap-oob="true">${topErrors(errors[''])}</div>
    ${fields.filter((f) => f !== 'name').map((f) => errorSlot(f, errors, true))}`
}

const topErrors = (list: string[] | undefined) =>
  list?.length ? html`<div class="error" role="alert">${list.map((m) => html`<p>${m}</p>`)}</div>` : ''

function errorSlot(name: string, errors: Errors, oob = false): Fragment {
  const list = errors[name]
  const attributes = html`class="error"
  id="${idOf(name)}-error"${oob ? html` hx-swap-oob="true"` : ''}${list?.length ? html` role="alert"` : ''}`
  // No white space around the message: an empty slot is :empty (hidden), a filled one reads exactly.
  // prettier-ignore
  return html`<p ${attributes}>${list?.join('; ') ?? ''}</p>`
}

function textField(label: string, name: string, value: string, errors: Errors, type = 'text') {
  const id = idOf(name)
  return html`<div class="field">
    <label for="${id}">${label}</label>
    <input
      id="${id}"
      name="${name}"
      type="${type}"
      value="${value}"
      aria-describedby="${id}-error"
      ${errors[name]?.length ? html`aria-invalid="true"` : ''}
    />
    ${errorSlot(name, errors)}
  </div>`
}

function selectField(
  label: string,
  name: string,
  value: string,
  options: readonly string[] | readonly (readonly [string, string])[],
  errors: Errors,
) {
  const id = idOf(name)
  const pairs = options.map((o) => (typeof o === 'string' ? ([o, o] as const) : o))
  // A value the API accepts but the list does not spell so (an alias): kept as typed.
  if (value !== '' && !pairs.some(([v]) => v === value)) pairs.push([value, value])
  return html`<div class="field">
    <label for="${id}">${label}</label>
    <select id="${id}" name="${name}" aria-describedby="${id}-error">
      ${pairs.map(([v, text]) => html`<option value="${v}" ${v === value ? html`selected` : ''}>${text}</option>`)}
    </select>
    ${errorSlot(name, errors)}
  </div>`
}
