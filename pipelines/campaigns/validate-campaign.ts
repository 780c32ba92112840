import type { z } from 'zod'
import {
  CAMPAIGN_LIMITS,
  inappCampaignInput,
  pushCampaignInput,
  savedAudienceIds,
  type ConversionFilter,
  type FrequencyAttribute,
  type Interval,
  type InappCampaignBody,
  type PushCampaignBody,
  type StoredAudiences,
  type StoredConversionEvent,
  type StoredFilterGroup,
  type StoredFrequency,
  type StoredInappCreative,
  type StoredInterval,
  type StoredPushCreative,
  type StoredPushSchedule,
} from '../../schemas/campaigns.ts'
import { filterValues } from './conversion-sql.ts'
import { parseInstant } from './schedule-time.ts'

/**
 * A campaign body → its canonical stored form, or every rule it breaks with the JSON path of each.
 * Pure: the only outside knowledge is the target-rules parser (the audience area's), passed in.
 * Creative ids are not assigned here (0 = to assign): the control applier allocates them.
 */

export interface Issue {
  path: string
  message: string
}

export type TargetRulesParser = (
  input: unknown,
) => { ok: true; rules: unknown } | { ok: false; issues: { path: unknown; message: string }[] }

export type Validated<T> = { ok: true; body: T } | { ok: false; issues: Issue[] }

export const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'

/** `a.b[0].c`: the JSON path as a client reads it. */
export function jsonPath(path: readonly PropertyKey[]): string {
  let out = ''
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out === '' ? String(part) : `.${String(part)}`
  }
  return out
}

const zodIssues = (error: z.ZodError, prefix: readonly PropertyKey[] = []): Issue[] =>
  error.issues.map((i) => ({ path: jsonPath([...prefix, ...i.path]), message: i.message }))

/** The message an edge answers with: every issue as "path: message". */
export const describeIssues = (issues: readonly Issue[]) =>
  issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`))

/** A single creative object is accepted as a list of one; answers keep the shape the client used. */
function normaliseCreatives(input: Record<string, unknown>): {
  input: Record<string, unknown>
  asObject: boolean
} {
  const c = input.creatives
  if (c !== null && typeof c === 'object' && !Array.isArray(c))
    return { input: { ...input, creatives: [c] }, asObject: true }
  return { input, asObject: false }
}

type NoNulls<T> = { [K in keyof T]?: Exclude<T[K], null | undefined> }
const omitNullish = <T extends Record<string, unknown>>(o: T): NoNulls<T> => {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(o)) if (v !== null && v !== undefined) out[k] = v
  return out as NoNulls<T>
}

const NUMERIC = new Set([
  'greater_than',
  'less_than',
  'greater_than_or_equal',
  'less_than_or_equal',
  'between',
])

function checkFilters(filters: readonly ConversionFilter[], at: string, issues: Issue[]) {
  filters.forEach((f, i) => {
    const path = `${at}[${i}].value`
    const values = filterValues(f)
    if (f.operator === 'is_defined' || f.operator === 'is_not_defined') return
    if (values.length === 0 || values.every((v) => v === ''))
      issues.push({ path, message: `is required with operator ${f.operator}` })
    else if (f.operator === 'between' && values.length !== 2)
      issues.push({ path, message: 'of between holds two numbers (an array, or "low,high")' })
    else if (NUMERIC.has(f.operator) && values.some((v) => v === '' || !Number.isFinite(Number(v))))
      issues.push({ path, message: `must be a number with operator ${f.operator}` })
  })
}

function filterGroup(
  group: { filters: ConversionFilter[]; operator: 'and' | 'or' } | null | undefined,
  at: string,
  issues: Issue[],
): StoredFilterGroup | undefined {
  if (!group) return undefined
  checkFilters(group.filters, `${at}.filters`, issues)
  return { filters: group.filters.map((f) => omitNullish(f) as ConversionFilter), operator: group.operator }
}

function conversion(
  input: z.infer<typeof pushCampaignInput>['conversion_event'],
  issues: Issue[],
): StoredConversionEvent | undefined {
  if (!input) return undefined
  const attributes = filterGroup(
    input.conversion_attributes,
    'conversion_event.conversion_attributes',
    issues,
  )
  return { event_name: input.event_name, ...(attributes && { conversion_attributes: attributes }) }
}

/** `target_rules` naming saved audiences (`{audiences: [id, …]}`, the original's shape), not rules. */
function isSavedShape(rules: unknown): rules is Record<string, unknown> {
  return rules !== null && typeof rules === 'object' && !Array.isArray(rules) && 'audiences' in rules
}

/**
 * The audience of a campaign in one of its shapes: everyone, saved audiences (`audience_id`, or
 * `target_rules.audiences` as the original's script sends it; `campaign_type` `saved_audience`
 * or its alias `audience`), or inline rules. What was sent is what is answered.
 */
function audiencesOf(
  input: z.infer<typeof pushCampaignInput>['audiences'],
  channel: 'push' | 'inapp',
  parseRules: TargetRulesParser,
  issues: Issue[],
): StoredAudiences {
  const hasId = input.audience_id !== null && input.audience_id !== undefined
  const hasRules = input.target_rules !== null && input.target_rules !== undefined
  const savedShape = hasRules && isSavedShape(input.target_rules)
  const type = input.campaign_type
  const saved = type === 'saved_audience' || type === 'audience'
  if (hasId && hasRules)
    issues.push({ path: 'audiences', message: 'give audience_id or target_rules, not both' })
  if (saved && !hasId && !savedShape)
    issues.push(
      type === 'audience'
        ? { path: 'audiences.audience_id', message: 'is required when campaign_type is audience' }
        : {
            path: 'audiences.target_rules.audiences',
            message: 'is required when campaign_type is saved_audience (the ids of saved audiences)',
          },
    )
  if (saved && hasRules && !savedShape)
    issues.push({
      path: 'audiences.target_rules',
      message: `must name saved audiences ({"audiences": [id, …]}) when campaign_type is ${type}`,
    })
  if (type === 'target_rules' && !hasRules)
    issues.push({ path: 'audiences.target_rules', message: 'is required when campaign_type is target_rules' })
  if (type === 'target_rules' && (hasId || savedShape))
    issues.push({
      path: hasId ? 'audiences.audience_id' : 'audiences.target_rules.audiences',
      message: 'must be absent when campaign_type is target_rules (inline rules): use saved_audience',
    })
  let rules: unknown
  let ids: number[] | undefined
  if (savedShape) {
    const { audiences: list, ...rest } = input.target_rules as Record<string, unknown>
    const parsed = savedAudienceIds.safeParse(list)
    if (parsed.success) ids = parsed.data
    else issues.push(...zodIssues(parsed.error, ['audiences', 'target_rules', 'audiences']))
    for (const key of Object.keys(rest))
      issues.push({
        path: `audiences.target_rules.${key}`,
        message: 'cannot be combined with audiences: target saved audiences or give rules, not both',
      })
  } else if (hasRules) {
    const parsed = parseRules(input.target_rules)
    if (parsed.ok) rules = parsed.rules
    else
      for (const issue of parsed.issues)
        issues.push({ path: prefixPath('audiences.target_rules', issue.path), message: issue.message })
  }
  // The original's own example sends campaign_type everyone together with target_rules: the rules
  // (or the saved audiences) apply. Absent, the type is read from the shape.
  const campaign_type =
    type ?? (hasId ? 'audience' : savedShape ? 'saved_audience' : hasRules ? 'target_rules' : 'everyone')
  return {
    campaign_type,
    control_group_percent: input.control_group_percent,
    ...(hasId && { audience_id: input.audience_id! }),
    ...(ids && { audience_ids: ids }),
    ...(rules !== undefined && { target_rules: rules }),
    // A push campaign may carry devices (the spec's audience shape has it); pushes go to every
    // device with a push token, so it is kept and answered, never used.
    ...(channel === 'inapp'
      ? { devices: [...new Set(input.devices ?? (['phone', 'tablet'] as const))] }
      : input.devices && { devices: [...new Set(input.devices)] }),
  }
}

/** The saved audiences a campaign names (audience_id or target_rules.audiences), with the path of each. */
export function savedAudiencesOf(audiences: StoredAudiences): { id: number; path: string }[] {
  if (audiences.audience_id !== undefined)
    return [{ id: audiences.audience_id, path: 'audiences.audience_id' }]
  return (audiences.audience_ids ?? []).map((id, i) => ({
    id,
    path: `audiences.target_rules.audiences[${i}]`,
  }))
}

/** `audiences.target_rules` + the parser's own path (a string, or a list of keys and indexes). */
function prefixPath(prefix: string, path: unknown): string {
  if (Array.isArray(path)) {
    const rest = jsonPath(path as PropertyKey[])
    return rest === '' ? prefix : rest.startsWith('[') ? `${prefix}${rest}` : `${prefix}.${rest}`
  }
  if (typeof path === 'string' && path !== '') {
    const rest = path.replace(/^target_rules\.?/, '')
    return rest === '' ? prefix : rest.startsWith('[') ? `${prefix}${rest}` : `${prefix}.${rest}`
  }
  return prefix
}

function frequency(items: readonly FrequencyAttribute[] | null | undefined): StoredFrequency[] | undefined {
  if (!items || items.length === 0) return undefined
  return items.map((f) => omitNullish(f) as StoredFrequency)
}

const DAY_INDEX = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const

/**
 * Intervals as clients send them (docs/campaigns.md, "Recurring"). `day_of_week` decides a weekly
 * interval's day; `on_day` is kept and answered whatever it holds, and read only where no
 * `day_of_week` is given: a weekly interval's day of the week (0 or 7 = sunday, 1 = monday … 6 =
 * saturday: the 0-based and the ISO numbering agree there), a monthly interval's day of the month.
 * A client sending both is never refused over what its `on_day` counts.
 */
function intervals(items: readonly Interval[], at: string, issues: Issue[]): StoredInterval[] {
  return items.map((item, i) => {
    const path = `${at}[${i}]`
    const dow = item.day_of_week ?? undefined
    const onDay = item.on_day ?? undefined
    const kept = {
      ...(dow !== undefined && { day_of_week: dow }),
      ...(onDay !== undefined && { on_day: onDay }),
    }
    if (item.interval === 'weekly') {
      if (dow !== undefined) return { interval: 'weekly', ...kept }
      if (onDay === undefined) {
        issues.push({ path: `${path}.day_of_week`, message: 'is required for a weekly interval' })
        return { interval: 'weekly' }
      }
      if (onDay < 0 || onDay > 7) {
        issues.push({
          path: `${path}.on_day`,
          message:
            'of a weekly interval without day_of_week is a day of the week, 0 or 7 (sunday), 1 (monday)..6',
        })
        return { interval: 'weekly', on_day: onDay }
      }
      // The day Sluice read on_day as is answered too, so the client sees it.
      return { interval: 'weekly', day_of_week: DAY_INDEX[onDay % 7]!, on_day: onDay }
    }
    if (item.interval === 'monthly') {
      if (onDay === undefined)
        issues.push({ path: `${path}.on_day`, message: 'is required for a monthly interval' })
      else if (onDay < 1 || onDay > 31)
        issues.push({ path: `${path}.on_day`, message: 'of a monthly interval is a day of the month, 1..31' })
      return { interval: 'monthly', ...kept }
    }
    return { interval: 'daily', ...kept }
  })
}

function pushSchedule(
  input: z.infer<typeof pushCampaignInput>['schedule'],
  issues: Issue[],
): StoredPushSchedule | undefined {
  const present = (['begin_immediately', 'on_schedule', 'recurring', 'optimized'] as const).filter(
    (k) => input[k] !== null && input[k] !== undefined,
  )
  if (present.length !== 1) {
    issues.push({
      path: 'schedule',
      message: `must hold exactly one of begin_immediately, on_schedule, recurring, optimized${present.length > 1 ? ` (found ${present.join(', ')})` : ''}`,
    })
    return undefined
  }
  if (input.begin_immediately)
    return {
      begin_immediately: input.begin_immediately === true ? {} : omitNullish(input.begin_immediately),
    }
  if (input.on_schedule) {
    const s = input.on_schedule
    return {
      on_schedule: {
        begin_date: s.begin_date,
        ...(s.starting_time_zone_id != null && { starting_time_zone_id: s.starting_time_zone_id }),
        ...(s.push_throttle_num_msgs != null && { push_throttle_num_msgs: s.push_throttle_num_msgs }),
        ...(s.send_local_tz && { send_local_tz: true }),
      },
    }
  }
  if (input.recurring) {
    const s = input.recurring
    const begin = parseInstant(s.begin_date, s.starting_time_zone_id ?? undefined)
    const end = parseInstant(s.end_date, s.starting_time_zone_id ?? undefined)
    if (end <= begin)
      issues.push({ path: 'schedule.recurring.end_date', message: 'must be after begin_date' })
    else if (end - begin > CAMPAIGN_LIMITS.maxRecurringDays * 86_400_000)
      issues.push({
        path: 'schedule.recurring.end_date',
        message: `must be at most ${CAMPAIGN_LIMITS.maxRecurringDays} days after begin_date`,
      })
    const freq = frequency(s.frequency_attributes)
    return {
      recurring: {
        begin_date: s.begin_date,
        end_date: s.end_date,
        ...(s.starting_time_zone_id != null && { starting_time_zone_id: s.starting_time_zone_id }),
        ...(s.push_throttle_num_msgs != null && { push_throttle_num_msgs: s.push_throttle_num_msgs }),
        ...(s.send_local_tz && { send_local_tz: true }),
        ...(freq && { frequency_attributes: freq }),
        intervals: intervals(s.intervals, 'schedule.recurring.intervals', issues),
      },
    }
  }
  return { optimized: { fallback_time: input.optimized!.fallback_time } }
}

/** Percents: one creative may omit it (100); several must each give one, summing to 100. */
function percents(items: readonly { percent?: number | null }[], issues: Issue[]): number[] {
  if (items.length === 1 && (items[0]?.percent === null || items[0]?.percent === undefined)) return [100]
  let missing = false
  items.forEach((c, i) => {
    if (c.percent === null || c.percent === undefined) {
      missing = true
      issues.push({
        path: `creatives[${i}].percent`,
        message: 'is required when there are several creatives',
      })
    }
  })
  const values = items.map((c) => c.percent ?? 0)
  const sum = values.reduce((a, b) => a + b, 0)
  if (!missing && sum !== 100)
    issues.push({ path: 'creatives', message: `percent weights must sum to 100 (they sum to ${sum})` })
  return values
}

function duplicateIds(items: readonly { id?: number | null }[], issues: Issue[]) {
  const seen = new Set<number>()
  items.forEach((c, i) => {
    if (c.id == null) return
    if (seen.has(c.id))
      issues.push({ path: `creatives[${i}].id`, message: `creative id ${c.id} appears twice` })
    seen.add(c.id)
  })
}

function asObject(input: unknown): Record<string, unknown> | undefined {
  return input !== null && typeof input === 'object' && !Array.isArray(input)
    ? (input as Record<string, unknown>)
    : undefined
}

export function validatePushCampaign(
  input: unknown,
  parseRules: TargetRulesParser,
): Validated<PushCampaignBody> {
  const object = asObject(input)
  if (!object) return { ok: false, issues: [{ path: '', message: 'the body must be a JSON object' }] }
  const { input: normalised, asObject: creativesAsObject } = normaliseCreatives(object)
  const parsed = pushCampaignInput.safeParse(normalised)
  if (!parsed.success) return { ok: false, issues: zodIssues(parsed.error) }
  const v = parsed.data
  const issues: Issue[] = []
  const conversion_event = conversion(v.conversion_event, issues)
  const audiences = audiencesOf(v.audiences, 'push', parseRules, issues)
  const schedule = pushSchedule(v.schedule, issues)
  const weights = percents(v.creatives, issues)
  duplicateIds(v.creatives, issues)
  if (issues.length > 0 || !schedule) return { ok: false, issues }
  const creatives: StoredPushCreative[] = v.creatives.map((c, i) => ({
    id: c.id ?? 0,
    letter: LETTERS[i]!,
    ...(c.title != null && { title: c.title }),
    percent: weights[i]!,
    key_values: c.key_values,
    build_attributes: omitNullish(c.build_attributes) as StoredPushCreative['build_attributes'],
  }))
  return {
    ok: true,
    body: {
      name: v.name,
      status: v.status,
      goal: v.goal,
      ...(conversion_event && { conversion_event }),
      audiences,
      schedule,
      creatives,
      ...(creativesAsObject && { creatives_as_object: true }),
    },
  }
}

/** The in-app `data` part; files are checked and attached by the caller (they are not JSON). */
export function validateInappCampaign(
  input: unknown,
  parseRules: TargetRulesParser,
): Validated<Omit<InappCampaignBody, 'assets'>> {
  const object = asObject(input)
  if (!object) return { ok: false, issues: [{ path: 'data', message: 'must be a JSON object' }] }
  const { input: normalised, asObject: creativesAsObject } = normaliseCreatives(object)
  const parsed = inappCampaignInput.safeParse(normalised)
  if (!parsed.success) return { ok: false, issues: zodIssues(parsed.error) }
  const v = parsed.data
  const issues: Issue[] = []
  const conversion_event = conversion(v.conversion_event, issues)
  const audiences = audiencesOf(v.audiences, 'inapp', parseRules, issues)
  const s = v.schedule
  const zone = s.starting_time_zone_id ?? undefined
  if (s.end_date && parseInstant(s.end_date, zone) <= parseInstant(s.begin_date, zone))
    issues.push({ path: 'schedule.end_date', message: 'must be after begin_date' })
  const filters = filterGroup(s.filter_attributes, 'schedule.filter_attributes', issues)
  const freq = frequency(s.frequency_attributes)
  const weights = percents(v.creatives, issues)
  duplicateIds(v.creatives, issues)
  if (issues.length > 0) return { ok: false, issues }
  const creatives: StoredInappCreative[] = v.creatives.map((c, i) => ({
    id: c.id ?? 0,
    letter: LETTERS[i]!,
    ...(c.title != null && { title: c.title }),
    percent: weights[i]!,
    position: c.position ?? 'center',
    key_values: c.key_values,
  }))
  return {
    ok: true,
    body: {
      name: v.name,
      status: v.status,
      goal: v.goal,
      ...(conversion_event && { conversion_event }),
      audiences,
      schedule: {
        ...omitNullish({
          trigger_name: s.trigger_name,
          trigger_type: s.trigger_type,
          event_name: s.event_name === '' ? undefined : s.event_name,
        }),
        ...(filters && { filter_attributes: filters }),
        begin_date: s.begin_date,
        ...(s.end_date != null && { end_date: s.end_date }),
        ...(s.starting_time_zone_id != null && { starting_time_zone_id: s.starting_time_zone_id }),
        ...(freq && { frequency_attributes: freq }),
      },
      creatives,
      ...(creativesAsObject && { creatives_as_object: true }),
    },
  }
}
