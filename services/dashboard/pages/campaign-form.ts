import { html } from 'hono/html'
import { STARTING_TIME_ZONES } from '../../../schemas/campaign-time-zones.ts'
import { CAMPAIGN_STATUSES, GOALS, INAPP_POSITIONS } from '../../../schemas/campaigns.ts'
import { errorsByField } from '../api.ts'
import { formErrors, type Fragment } from '../layout.ts'

/**
 * The campaign form of the dashboard, as pure functions: a campaign as the campaigns API answers it
 * → the form's values; the submitted values → the body the API takes (docs/campaigns.md). Field
 * names are the JSON paths the API names in its errors (`creatives[1].percent`,
 * `schedule.begin_date`), so each error lands next to its field. Nested lists the form does not
 * spell out field by field (rules, filters, intervals, frequency caps) are JSON text areas, so an
 * edit keeps every field the API knows.
 */

export type Channel = 'push' | 'inapp'
export type Values = Record<string, string>
export type Errors = Record<string, string[]>

export const PUSH_SCHEDULES = ['begin_immediately', 'on_schedule', 'recurring', 'optimized'] as const
const SCHEDULE_LABELS: Record<(typeof PUSH_SCHEDULES)[number], string> = {
  begin_immediately: 'Immediately',
  on_schedule: 'Once, at a date',
  recurring: 'Recurring',
  optimized: "Optimized (each device's usual hour)",
}
const AUDIENCE_TYPES = [
  ['everyone', 'Everyone (every install of the app)'],
  ['saved_audience', 'Saved audiences (their union)'],
  ['target_rules', 'Rules (target_rules JSON)'],
] as const
const PUSH_ATTRIBUTES = [
  ['push_title', 'Push title'],
  ['push_subtitle', 'Push subtitle'],
  ['push_category', 'Category'],
  ['ll_deep_link_url', 'Deep link URL'],
  ['sound', 'Sound'],
] as const

const creative = (i: number, rest: string) => `creatives[${i}].${rest}`

/** How many creatives the submitted form holds (its hidden count; at least one). */
export const creativeCount = (v: Values) => Math.max(1, Math.min(26, Number(v.creative_count) || 1))

/** The form's values of a campaign the API answered (GET …/campaigns/:id). */
export function valuesOfCampaign(channel: Channel, campaign: Record<string, unknown>): Values {
  const c = campaign as {
    name?: string
    status?: string
    goal?: string
    conversion_event?: { event_name?: string; conversion_attributes?: unknown } | null
    audiences?: {
      campaign_type?: string
      control_group_percent?: number
      audience_id?: number | null
      target_rules?: { audiences?: number[] } & Record<string, unknown>
      devices?: string[] | null
    }
    schedule?: Record<string, Record<string, unknown> | true | undefined>
    creatives?: unknown
  }
  const v: Values = {
    channel,
    name: c.name ?? '',
    status: c.status ?? 'draft',
    goal: c.goal ?? 'activate',
    'conversion_event.event_name': c.conversion_event?.event_name ?? '',
    'conversion_event.conversion_attributes': json(c.conversion_event?.conversion_attributes),
    'audiences.control_group_percent': String(c.audiences?.control_group_percent ?? 0),
  }
  const a = c.audiences ?? {}
  const saved = a.target_rules?.audiences ?? (a.audience_id ? [a.audience_id] : undefined)
  if (saved) {
    v['audiences.campaign_type'] = 'saved_audience'
    v['audiences.target_rules.audiences'] = saved.join(', ')
  } else if (a.target_rules) {
    v['audiences.campaign_type'] = 'target_rules'
    v['audiences.target_rules'] = json(a.target_rules)
  } else v['audiences.campaign_type'] = 'everyone'
  if (a.devices?.length === 1) v['audiences.devices'] = a.devices[0]!
  const schedule = c.schedule ?? {}
  if (channel === 'push') {
    const kind = PUSH_SCHEDULES.find((k) => schedule[k]) ?? 'begin_immediately'
    v['schedule.kind'] = kind
    const s = schedule[kind] === true ? {} : (schedule[kind] ?? {})
    copyText(v, s, [
      'begin_date',
      'end_date',
      'fallback_time',
      'starting_time_zone_id',
      'push_throttle_num_msgs',
    ])
    if (s.send_local_tz) v['schedule.send_local_tz'] = 'on'
    if (s.intervals)
      v['schedule.intervals'] = json(
        (s.intervals as Record<string, unknown>[]).map(({ interval_start: _start, ...i }) => i),
      )
    v['schedule.frequency_attributes'] = json(s.frequency_attributes)
  } else {
    const s = schedule as unknown as Record<string, unknown>
    copyText(v, s, [
      'trigger_name',
      'trigger_type',
      'event_name',
      'begin_date',
      'end_date',
      'starting_time_zone_id',
    ])
    v['schedule.filter_attributes'] = json(s.filter_attributes)
    v['schedule.frequency_attributes'] = json(s.frequency_attributes)
  }
  const creatives = (Array.isArray(c.creatives) ? c.creatives : c.creatives ? [c.creatives] : []) as {
    id?: number
    title?: string
    percent?: number
    position?: string
    key_values?: { key: string; value: string }[]
    build_attributes?: Record<string, string | undefined>
    file_phone?: string
    file_tablet?: string
  }[]
  v.creative_count = String(Math.max(1, creatives.length))
  creatives.forEach((cr, i) => {
    if (cr.id) v[creative(i, 'id')] = String(cr.id)
    v[creative(i, 'title')] = cr.title ?? ''
    v[creative(i, 'percent')] = cr.percent === undefined || cr.percent === null ? '' : String(cr.percent)
    v[creative(i, 'key_values')] = (cr.key_values ?? []).map((kv) => `${kv.key}=${kv.value}`).join('\n')
    if (channel === 'push') {
      v[creative(i, 'build_attributes.push_message')] = cr.build_attributes?.push_message ?? ''
      for (const [name] of PUSH_ATTRIBUTES)
        v[creative(i, `build_attributes.${name}`)] = cr.build_attributes?.[name] ?? ''
    } else {
      v[creative(i, 'position')] = cr.position ?? 'center'
      v[creative(i, 'file_phone')] = cr.file_phone ?? ''
      v[creative(i, 'file_tablet')] = cr.file_tablet ?? ''
    }
  })
  return v
}

const json = (value: unknown) => (value === undefined || value === null ? '' : JSON.stringify(value, null, 1))

function copyText(v: Values, from: Record<string, unknown>, names: readonly string[]) {
  for (const name of names) {
    const value = from[name]
    if (typeof value === 'string' || typeof value === 'number') v[`schedule.${name}`] = String(value)
  }
}

/**
 * The API body of the submitted form, or the fields whose text is not what the form needs (JSON
 * that does not parse): those are the dashboard's own checks; every other rule is the API's.
 */
export function bodyOfValues(
  channel: Channel,
  v: Values,
  hasFile: (name: string) => boolean = () => false,
): { ok: true; body: Record<string, unknown> } | { ok: false; errors: Errors } {
  const errors: Errors = {}
  const parsed = (name: string): unknown => {
    const text = (v[name] ?? '').trim()
    if (text === '') return undefined
    try {
      return JSON.parse(text) as unknown
    } catch (e) {
      errors[name] = [`not JSON: ${(e as Error).message}`]
      return undefined
    }
  }
  const text = (name: string) => (v[name] ?? '').trim()
  // A number when the text is one; otherwise the text, and the API says what is wrong with it.
  const number = (name: string) => {
    const t = text(name)
    return t === '' ? undefined : /^-?\d+$/.test(t) ? Number(t) : t
  }

  const eventName = text('conversion_event.event_name')
  const conversionAttributes = parsed('conversion_event.conversion_attributes')
  const type = text('audiences.campaign_type') || 'everyone'
  const audiences: Record<string, unknown> = {
    campaign_type: type,
    control_group_percent: number('audiences.control_group_percent') ?? 0,
  }
  if (type === 'saved_audience')
    audiences.target_rules = {
      audiences: text('audiences.target_rules.audiences')
        .split(/[\s,]+/)
        .filter(Boolean)
        .map((id) => (/^\d+$/.test(id) ? Number(id) : id)),
    }
  else if (type === 'target_rules') audiences.target_rules = parsed('audiences.target_rules')
  if (channel === 'inapp' && text('audiences.devices')) audiences.devices = [text('audiences.devices')]

  const optional = (entries: [string, unknown][]) =>
    Object.fromEntries(entries.filter(([, value]) => value !== undefined && value !== ''))
  let schedule: Record<string, unknown>
  if (channel === 'push') {
    const kind = text('schedule.kind') || 'begin_immediately'
    const common = {
      starting_time_zone_id: number('schedule.starting_time_zone_id'),
      push_throttle_num_msgs: number('schedule.push_throttle_num_msgs'),
      send_local_tz: v['schedule.send_local_tz'] === 'on' ? true : undefined,
    }
    schedule =
      kind === 'on_schedule'
        ? { on_schedule: optional(Object.entries({ begin_date: text('schedule.begin_date'), ...common })) }
        : kind === 'recurring'
          ? {
              recurring: optional(
                Object.entries({
                  begin_date: text('schedule.begin_date'),
                  end_date: text('schedule.end_date'),
                  ...common,
                  intervals: parsed('schedule.intervals'),
                  frequency_attributes: parsed('schedule.frequency_attributes'),
                }),
              ),
            }
          : kind === 'optimized'
            ? { optimized: optional([['fallback_time', text('schedule.fallback_time')]]) }
            : { begin_immediately: optional([['push_throttle_num_msgs', common.push_throttle_num_msgs]]) }
  } else {
    schedule = optional([
      ...(['trigger_name', 'trigger_type', 'event_name', 'begin_date', 'end_date'] as const).map(
        (name): [string, unknown] => [name, text(`schedule.${name}`)],
      ),
      ['starting_time_zone_id', number('schedule.starting_time_zone_id')],
      ['filter_attributes', parsed('schedule.filter_attributes')],
      ['frequency_attributes', parsed('schedule.frequency_attributes')],
    ])
  }

  const creatives: Record<string, unknown>[] = []
  const blank: boolean[] = []
  for (let i = 0; i < creativeCount(v); i++) {
    const own = Object.keys(v).filter((k) => k.startsWith(`creatives[${i}].`) && !k.endsWith('.id'))
    const files = hasFile(`file_phone_${i + 1}`) || hasFile(`file_tablet_${i + 1}`)
    blank.push(!files && own.every((k) => text(k) === '' || k.endsWith('.position')))
    const keyValues = text(creative(i, 'key_values'))
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean)
      .map((line) => {
        const at = line.indexOf('=')
        return at < 0
          ? { key: line, value: '' }
          : { key: line.slice(0, at).trim(), value: line.slice(at + 1).trim() }
      })
    const out: Record<string, unknown> = optional([
      ['id', number(creative(i, 'id'))],
      ['title', text(creative(i, 'title'))],
      ['percent', number(creative(i, 'percent'))],
      ['key_values', keyValues],
    ])
    if (channel === 'push')
      out.build_attributes = optional([
        ['push_message', v[creative(i, 'build_attributes.push_message')] ?? ''],
        ...PUSH_ATTRIBUTES.map(([name]): [string, unknown] => [
          name,
          text(creative(i, `build_attributes.${name}`)),
        ]),
      ])
    else out.position = text(creative(i, 'position')) || 'center'
    creatives.push(out)
  }
  // Slots left empty at the end are no creatives (the form offers one more on "Add a creative");
  // the others keep their index, which the API's error paths and file part names count by.
  while (creatives.length > 1 && blank[creatives.length - 1]) creatives.pop()
  const body: Record<string, unknown> = {
    name: text('name'),
    status: text('status') || 'draft',
    goal: text('goal') || 'activate',
    conversion_event: eventName
      ? optional([
          ['event_name', eventName],
          ['conversion_attributes', conversionAttributes],
        ])
      : null,
    audiences,
    schedule,
    creatives,
  }
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, body }
}

/** Every field of the form, most specific first: an API error's path goes to the first it starts with. */
export function formFields(channel: Channel, v: Values): string[] {
  const fields = [
    'name',
    'status',
    'goal',
    'conversion_event.event_name',
    'conversion_event.conversion_attributes',
    'audiences.control_group_percent',
    'audiences.target_rules.audiences',
    'audiences.target_rules',
    'audiences.devices',
    'audiences',
    ...[
      'begin_date',
      'end_date',
      'fallback_time',
      'starting_time_zone_id',
      'push_throttle_num_msgs',
      'send_local_tz',
      'intervals',
      'frequency_attributes',
      'trigger_name',
      'trigger_type',
      'event_name',
      'filter_attributes',
    ].map((f) => `schedule.${f}`),
    'schedule.kind',
  ]
  for (let i = 0; i < creativeCount(v); i++) {
    fields.push(
      creative(i, 'title'),
      creative(i, 'percent'),
      creative(i, 'key_values'),
      creative(i, 'position'),
      creative(i, 'build_attributes.push_message'),
      ...PUSH_ATTRIBUTES.map(([n]) => creative(i, `build_attributes.${n}`)),
      creative(i, 'build_attributes'),
      `file_phone_${i + 1}`,
      `file_tablet_${i + 1}`,
      `creatives[${i}]`,
    )
  }
  if (channel === 'push') fields.push('creatives')
  return fields
}

/**
 * The API's errors by the form field they name. A push schedule's path names its kind
 * (`schedule.on_schedule.begin_date`); the form has one field per name whatever the kind, and
 * `schedule` alone (exactly one kind) is the kind's select.
 */
export function campaignErrors(channel: Channel, v: Values, messages: readonly string[]): Errors {
  const rewritten = messages.map((m) =>
    m
      .replace(/^schedule\.(?:begin_immediately|on_schedule|recurring|optimized)\./, 'schedule.')
      .replace(/^schedule: /, 'schedule.kind: '),
  )
  return errorsByField(rewritten, formFields(channel, v))
}

// ---------------------------------------------------------------------------------------------
// Rendering

const idOf = (name: string) => `f-${name.replace(/[^A-Za-z0-9_]+/g, '-').replace(/-$/, '')}`

/** A labelled control of the form with the API's messages for its field under it. */
function control(
  label: string,
  name: string,
  errors: Errors | undefined,
  widget: (attrs: Fragment | string) => Fragment,
  hint?: string,
) {
  const id = idOf(name)
  const list = errors?.[name]
  const describedBy = [list?.length ? `${id}-error` : '', hint ? `${id}-hint` : ''].filter(Boolean).join(' ')
  const attrs = html`id="${id}"
  name="${name}"${list?.length ? html` aria-invalid="true"` : ''}${describedBy ? html` aria-describedby="${describedBy}"` : ''}`
  return html`<div class="field">
    <label for="${id}">${label}</label>
    ${widget(attrs)} ${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : ''}
    ${list?.length ? html`<p class="error" id="${id}-error" role="alert">${list.join('; ')}</p>` : ''}
  </div>`
}

const textField = (
  label: string,
  name: string,
  v: Values,
  e: Errors | undefined,
  hint?: string,
  type = 'text',
) => control(label, name, e, (a) => html`<input ${a} type="${type}" value="${v[name] ?? ''}" />`, hint)
const area = (label: string, name: string, v: Values, e: Errors | undefined, hint?: string, rows = 3) =>
  control(label, name, e, (a) => html`<textarea ${a} rows="${rows}">${v[name] ?? ''}</textarea>`, hint)
const select = (
  label: string,
  name: string,
  options: readonly (readonly [string, string])[],
  v: Values,
  e: Errors | undefined,
) =>
  control(
    label,
    name,
    e,
    (a) =>
      html`<select ${a}>
        ${options.map(([value, text]) => html`<option value="${value}" ${v[name] === value ? html`selected` : ''}>${text}</option>`)}
      </select>`,
  )

const ZONES: [string, string][] = [
  ['', 'UTC (default)'],
  ...[...STARTING_TIME_ZONES.entries()].map(([id, zone]): [string, string] => [
    String(id),
    `${id}: ${zone.zone} (${zone.label})`,
  ]),
]

/** The whole campaign form (create or edit); `action` the dashboard route it posts to. */
export function campaignForm(options: {
  channel: Channel
  action: string
  csrf: Fragment
  values: Values
  errors: Errors | undefined
  submit: string
}) {
  const { channel, values: v, errors: e } = options
  const count = creativeCount(v)
  const pair = (s: string): [string, string] => [s, s]
  return html`<form
    method="post"
    action="${options.action}"
    class="card campaign-form"
    ${channel === 'inapp' ? html`enctype="multipart/form-data"` : ''}
  >
    ${options.csrf} ${formErrors(e)}
    <input type="hidden" name="channel" value="${channel}" />
    <input type="hidden" name="creative_count" value="${count}" />
    <fieldset>
      <legend>Campaign</legend>
      ${textField('Name', 'name', v, e)} ${select('Status', 'status', CAMPAIGN_STATUSES.map(pair), v, e)}
      ${select('Goal', 'goal', GOALS.map(pair), v, e)}
      ${textField('Conversion event (optional)', 'conversion_event.event_name', v, e)}
      ${area(
        'Conversion filters (JSON, optional)',
        'conversion_event.conversion_attributes',
        v,
        e,
        '{"filters": [{"dimension_name": "country", "operator": "is_one_of", "value": ["fr"]}], "operator": "and"}',
      )}
    </fieldset>
    <fieldset>
      <legend>Audience</legend>
      ${select('Who', 'audiences.campaign_type', AUDIENCE_TYPES, v, e)}
      ${textField('Saved audience ids (comma-separated)', 'audiences.target_rules.audiences', v, e)}
      ${area('Rules (target_rules JSON, docs/audiences.md)', 'audiences.target_rules', v, e)}
      ${textField('Control group (% held out)', 'audiences.control_group_percent', v, e, undefined, 'number')}
      ${
        channel === 'inapp'
          ? select(
              'Devices',
              'audiences.devices',
              [
                ['', 'phone and tablet'],
                ['phone', 'phone'],
                ['tablet', 'tablet'],
              ],
              v,
              e,
            )
          : ''
      }
    </fieldset>
    <fieldset>
      <legend>Schedule</legend>
      ${channel === 'push' ? pushSchedule(v, e) : inappSchedule(v, e)}
    </fieldset>
    ${Array.from({ length: count }, (_, i) => creativeFields(channel, i, v, e))}
    <div class="actions">
      <button type="submit" name="action" value="save">${options.submit}</button>
      <button type="submit" name="action" value="add-creative" formnovalidate>Add a creative</button>
    </div>
  </form>`
}

function pushSchedule(v: Values, e: Errors | undefined) {
  return html`${select(
      'When',
      'schedule.kind',
      PUSH_SCHEDULES.map((k) => [k, SCHEDULE_LABELS[k]] as const),
      v,
      e,
    )}
    ${textField('Begin (ISO 8601; without an offset: in the starting zone)', 'schedule.begin_date', v, e, 'once and recurring; e.g. 2026-12-01T09:30:00Z')}
    ${textField('End (recurring)', 'schedule.end_date', v, e)}
    ${textField('Fallback time (optimized)', 'schedule.fallback_time', v, e)}
    ${select('Starting time zone', 'schedule.starting_time_zone_id', ZONES, v, e)}
    ${textField('Throttle (messages per minute; empty: none)', 'schedule.push_throttle_num_msgs', v, e, undefined, 'number')}
    <div class="field">
      <label class="check"
        ><input
          type="checkbox"
          name="schedule.send_local_tz"
          ${v['schedule.send_local_tz'] === 'on' ? html`checked` : ''}
        />
        In each device's local time</label
      >
    </div>
    ${area('Intervals (recurring, JSON)', 'schedule.intervals', v, e, '[{"interval": "weekly", "day_of_week": "monday"}]')}
    ${area('Frequency caps (recurring, JSON)', 'schedule.frequency_attributes', v, e, '[{"days": 7, "count": 1}]')}`
}

function inappSchedule(v: Values, e: Errors | undefined) {
  return html`${textField('Trigger name', 'schedule.trigger_name', v, e)}
  ${textField('Trigger type', 'schedule.trigger_type', v, e)}
  ${textField('Event that shows it (empty: a session start)', 'schedule.event_name', v, e)}
  ${area('Event filters (JSON, optional)', 'schedule.filter_attributes', v, e)}
  ${textField('Begin (ISO 8601)', 'schedule.begin_date', v, e, 'e.g. 2026-12-01T00:00:00Z')}
  ${textField('End (optional)', 'schedule.end_date', v, e)}
  ${select('Starting time zone', 'schedule.starting_time_zone_id', ZONES, v, e)}
  ${area('Frequency caps (JSON)', 'schedule.frequency_attributes', v, e, '[{"days": 1, "count": 1}]')}`
}

function creativeFields(channel: Channel, i: number, v: Values, e: Errors | undefined) {
  const letter = String.fromCharCode(65 + i)
  const name = (rest: string) => creative(i, rest)
  return html`<fieldset>
    <legend>Creative ${letter}</legend>
    ${v[name('id')] ? html`<input type="hidden" name="${name('id')}" value="${v[name('id')]}" />` : ''}
    ${formErrors(e?.[`creatives[${i}]`] ? { '': e[`creatives[${i}]`]! } : undefined)}
    ${textField(`Creative ${letter} title`, name('title'), v, e)}
    ${textField(`Creative ${letter} percent`, name('percent'), v, e, 'with several creatives, their percents sum to 100', 'number')}
    ${
      channel === 'push'
        ? html`${area(`Creative ${letter} message`, name('build_attributes.push_message'), v, e, 'empty: a silent push', 2)}
          ${PUSH_ATTRIBUTES.map(([n, label]) => textField(`Creative ${letter} ${label.toLowerCase()}`, name(`build_attributes.${n}`), v, e))}`
        : html`${select(
            `Creative ${letter} position`,
            name('position'),
            INAPP_POSITIONS.map((p) => [p, p] as const),
            v,
            e,
          )}
          ${fileField(`Creative ${letter} phone file (HTML or zip)`, `file_phone_${i + 1}`, v[name('file_phone')], e)}
          ${fileField(`Creative ${letter} tablet file (HTML or zip)`, `file_tablet_${i + 1}`, v[name('file_tablet')], e)}`
    }
    ${area(`Creative ${letter} key/values (key=value, one a line)`, name('key_values'), v, e, undefined, 2)}
  </fieldset>`
}

function fileField(label: string, name: string, current: string | undefined, e: Errors | undefined) {
  return control(
    label,
    name,
    e,
    (a) => html`<input ${a} type="file" accept=".html,.htm,.zip,text/html,application/zip" />`,
    current ? `now: ${current} (no file chosen: it stays)` : undefined,
  )
}
