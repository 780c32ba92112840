import { z } from 'zod'
import { charsAtMost } from './events.ts'

/**
 * The audience rule language: `target_rules` of audiences and campaigns, and the push endpoint's
 * `profile` target. Every spelling real clients send is accepted (the spec's "is one of", the
 * conversion spelling "is_one_of", other case and separator variants, a scalar where `values` is
 * an array, nulls where a field is optional) and normalised to one canonical form, `TargetRules`,
 * which the compiler (pipelines/audiences/compile-rules.ts) and the in-memory evaluator read.
 *
 * A body that breaks a rule yields issues naming the JSON path
 * (`target_rules.behavior.rules[0].count_operator`); the API answers 422 with them.
 * The semantics of every field are in docs/audiences.md, "Target rules".
 */

/** Documented bounds of a rule set (docs/audiences.md, "Limits"). */
export const AUDIENCE_LIMITS = {
  /** Largest `days` and largest `neg_time_window` bound: how far back a behavior rule looks. */
  maxDays: 365,
  /** `days` when a behavior part omits it. */
  defaultDays: 30,
  maxRules: 20,
  maxFiltersPerRule: 20,
  maxCriteria: 50,
  maxValuesPerFilter: 1000,
  /** Largest `count` of a behavior rule. */
  maxCount: 1_000_000_000,
  /** Largest N of a profile criterion "within the last N days". */
  maxWithinDays: 36_500,
  /** Longest compared value, in characters. */
  maxValueChars: 255,
  /** Longest event name, dimension name or profile key, in characters. */
  maxNameChars: 128,
} as const

export const GROUP_OPERATORS = ['and', 'or'] as const
export type GroupOperator = (typeof GROUP_OPERATORS)[number]

export const TARGETING_TYPES = ['install_id'] as const
export type TargetingType = (typeof TARGETING_TYPES)[number]

/** `event` / `not-event` count events; `session` / `not-session` count sessions; `first-session`: the install's first session ever falls in the window. */
export const RULE_TYPES = ['event', 'not-event', 'session', 'not-session', 'first-session'] as const
export type RuleType = (typeof RULE_TYPES)[number]

export const COUNT_OPERATORS = ['less_than', 'greater_than', 'exactly', 'at_least', 'at_most'] as const
export type CountOperator = (typeof COUNT_OPERATORS)[number]

/** Operators of a behavior rule's condition filters. */
export const FILTER_OPERATORS = [
  'is_one_of',
  'is_not_one_of',
  'contains',
  'does_not_contain',
  'greater_than',
  'less_than',
  'greater_than_or_equal',
  'less_than_or_equal',
  'between',
  'is_defined',
  'is_not_defined',
] as const
export type FilterOperator = (typeof FILTER_OPERATORS)[number]

/** Operators of a profile criterion: the filter operators plus the date ones. */
export const CRITERION_OPERATORS = [...FILTER_OPERATORS, 'before', 'after', 'within_last_days'] as const
export type CriterionOperator = (typeof CRITERION_OPERATORS)[number]

export const SCOPES = ['app', 'org'] as const
export type Scope = (typeof SCOPES)[number]

/** How a criterion compares: as text, as numbers, or as calendar dates (`YYYY-MM-DD`). */
export const DATE_TYPES = ['string', 'number', 'date'] as const
export type DateType = (typeof DATE_TYPES)[number]

/** Device dimensions an event filter reads from the event row's columns, by canonical name. */
export const EVENT_DEVICE_DIMENSIONS = [
  'country',
  'language',
  'app_version',
  'os_version',
  'platform',
  'model',
  'device_timezone',
] as const
export type EventDeviceDimension = (typeof EVENT_DEVICE_DIMENSIONS)[number]

/** Dimensions a session rule's filters can read (the columns a session row carries). */
export const SESSION_DIMENSIONS = ['country', 'app_version', 'os_version', 'platform'] as const
export type SessionDimension = (typeof SESSION_DIMENSIONS)[number]

/** Prefix that makes a filter read an event attribute even where its name is a device dimension. */
export const ATTRIBUTE_PREFIX = 'attributes.'

/**
 * A push status (as the SDK logs it: "Enabled (Prominent)", "Provisional", "Disabled" …) whose
 * lower-cased text begins with one of these means push is off for the install.
 */
export const DISABLED_PUSH_STATUS_PREFIXES = [
  'disabled',
  'denied',
  'opted out',
  'opted-out',
  'opted_out',
] as const

// ---------------------------------------------------------------------------------------------
// Canonical form

export interface Filter {
  /** A device dimension (canonical name, see EVENT_DEVICE_DIMENSIONS) or an event attribute key. */
  dimension_name: string
  operator: FilterOperator
  /** Always an array of text; `[]` for is_defined / is_not_defined; two sorted bounds for between. */
  values: string[]
}

export interface Conditions {
  operator: GroupOperator
  filters: Filter[]
}

export interface BehaviorRule {
  rule_type: RuleType
  /** Set for event and not-event rules, null for the session kinds. */
  event_name: string | null
  /** null: not given (event/session: at least one; not-event/not-session: none). */
  count: number | null
  count_operator: CountOperator
  conditions: Conditions
  /** [from, to] days ago with from >= to, or null: the behavior part's `days`. */
  neg_time_window: [number, number] | null
}

export interface BehaviorRules {
  days: number
  behavior_rule_operator: GroupOperator
  rules: BehaviorRule[]
}

export interface ProfileCriterion {
  key: string
  scope: Scope
  date_type: DateType
  operator: CriterionOperator
  /** Text; dates as `YYYY-MM-DD`; `[]` for is_defined / is_not_defined. */
  values: string[]
}

export interface ProfileRules {
  operator: GroupOperator
  criteria: ProfileCriterion[]
}

export interface TargetRules {
  behavior_profile_operator: GroupOperator
  targeting_type: TargetingType
  /** null: no behavior part (also when `behavior` was sent with no rules). */
  behavior: BehaviorRules | null
  /** null: no profile part (also when `profile` was sent with no criteria). */
  profile: ProfileRules | null
  /**
   * A static audience (docs/imports.md): its members are the app's installs named by these
   * imported member lists (audience_list_members), and only those. Absent on rule audiences.
   */
  static?: StaticRules
}

export interface StaticRules {
  /** Member lists (import ids), their union is the audience. */
  lists: string[]
}

/** An import id: what names a member list. */
export const LIST_ID = /^[A-Za-z0-9_-]{1,64}$/
/** Lists one static audience may union (each `add` import adds one). */
export const MAX_STATIC_LISTS = 100

export interface RuleIssue {
  path: string
  message: string
}

export type ParseResult<T> = { ok: true; rules: T } | { ok: false; issues: RuleIssue[] }

// ---------------------------------------------------------------------------------------------
// Shared helpers of the semantics (the compiler and the evaluator both follow these)

/** A decimal number as text: what makes a comparison numeric. */
export const NUMERIC_TEXT = /^-?[0-9]{1,16}(\.[0-9]{1,9})?$/
export const isNumericText = (s: string): boolean => NUMERIC_TEXT.test(s)

/** Where a filter reads its value: a column of the event (or session) row, or an event attribute. */
export type DimensionSource = { kind: 'column'; column: string } | { kind: 'attribute'; key: string }

/** The column a canonical device dimension has in `events` and in `sessions`. */
export const EVENT_COLUMN: Record<EventDeviceDimension, string> = {
  country: 'country',
  language: 'language',
  app_version: 'app_version',
  os_version: 'os_version',
  platform: 'platform',
  model: 'model',
  device_timezone: 'device_timezone',
}
export const SESSION_COLUMN: Record<SessionDimension, string> = {
  country: 'country',
  app_version: 'app_ver',
  os_version: 'os_ver',
  platform: 'platform',
}

export function dimensionSource(ruleType: RuleType, name: string): DimensionSource {
  if (name.startsWith(ATTRIBUTE_PREFIX))
    return { kind: 'attribute', key: name.slice(ATTRIBUTE_PREFIX.length) }
  if (ruleType === 'event' || ruleType === 'not-event') {
    const column = (EVENT_COLUMN as Record<string, string>)[name]
    return Object.hasOwn(EVENT_COLUMN, name) && column
      ? { kind: 'column', column }
      : { kind: 'attribute', key: name }
  }
  const column = (SESSION_COLUMN as Record<string, string>)[name]
  if (Object.hasOwn(SESSION_COLUMN, name) && column) return { kind: 'column', column }
  throw new Error(`dimension ${name} is not available on sessions`)
}

/** A comparison operator (one value, or two for between). */
export const isComparison = (op: CriterionOperator): boolean =>
  op === 'greater_than' ||
  op === 'less_than' ||
  op === 'greater_than_or_equal' ||
  op === 'less_than_or_equal' ||
  op === 'between' ||
  op === 'before' ||
  op === 'after'

// ---------------------------------------------------------------------------------------------
// Spellings

/** Lower case, trimmed, runs of spaces, dashes and underscores as one underscore. */
const spelling = (s: string) =>
  s
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, '_')

function aliases<T extends string>(table: Partial<Record<T, readonly string[]>>): Map<string, T> {
  const map = new Map<string, T>()
  for (const canonical of Object.keys(table) as T[]) {
    map.set(spelling(canonical), canonical)
    for (const alias of table[canonical] ?? []) map.set(spelling(alias), canonical)
  }
  return map
}

const GROUP_SPELLINGS = aliases<GroupOperator>({ and: ['&&', 'all'], or: ['||', 'any'] })
const TARGETING_SPELLINGS = aliases<TargetingType>({ install_id: ['install', 'installs', 'install_uuid'] })
const RULE_TYPE_SPELLINGS = aliases<RuleType>({
  event: ['events', 'did_event', 'did'],
  'not-event': ['not_event', 'notevent', 'no_event', 'did_not', 'did_not_event', 'not_did_event'],
  session: ['sessions', 'had_session'],
  'not-session': ['not_session', 'no_session', 'no_sessions', 'notsession', 'did_not_have_session'],
  'first-session': ['first_session', 'firstsession', 'new_user', 'new_install', 'install'],
})
const COUNT_SPELLINGS = aliases<CountOperator>({
  less_than: ['lt', '<', 'fewer_than', 'less'],
  greater_than: ['gt', '>', 'more_than', 'greater'],
  exactly: ['exact', 'equals', 'equal', 'equal_to', 'eq', '=', '==', 'is'],
  at_least: ['atleast', 'gte', '>=', 'greater_than_or_equal', 'greater_than_or_equal_to', 'min'],
  at_most: ['atmost', 'lte', '<=', 'less_than_or_equal', 'less_than_or_equal_to', 'max'],
})
const FILTER_OPERATOR_TABLE: Record<FilterOperator, readonly string[]> = {
  is_one_of: ['in', 'is', 'one_of', 'is_any_of', 'any_of', 'equals', 'equal', 'eq', '=', '==', 'is_equal_to'],
  is_not_one_of: ['not_in', 'is_not', 'not_one_of', 'is_none_of', 'none_of', 'not_equals', 'ne', '!=', '<>'],
  contains: ['contain', 'includes', 'like'],
  does_not_contain: [
    'not_contains',
    'not_contain',
    'doesnt_contain',
    "doesn't_contain",
    'not_like',
    'excludes',
  ],
  greater_than: ['gt', '>', 'greater', 'more_than'],
  less_than: ['lt', '<', 'less', 'fewer_than'],
  greater_than_or_equal: ['gte', '>=', 'greater_than_or_equal_to', 'at_least'],
  less_than_or_equal: ['lte', '<=', 'less_than_or_equal_to', 'at_most'],
  between: ['is_between', 'in_range', 'range'],
  is_defined: ['defined', 'exists', 'is_set', 'is_not_null', 'not_null', 'has_value', 'is_present'],
  is_not_defined: [
    'not_defined',
    'undefined',
    'is_undefined',
    'not_exists',
    'does_not_exist',
    'is_null',
    'null',
    'is_not_set',
  ],
}
const FILTER_SPELLINGS = aliases<FilterOperator>(FILTER_OPERATOR_TABLE)
const CRITERION_SPELLINGS = aliases<CriterionOperator>({
  ...FILTER_OPERATOR_TABLE,
  before: ['is_before', 'earlier_than', 'date_before'],
  after: ['is_after', 'later_than', 'date_after'],
  within_last_days: [
    'within_the_last',
    'within_last',
    'in_the_last',
    'in_last',
    'within_the_last_days',
    'within_the_last_n_days',
    'within_last_n_days',
    'in_the_last_days',
    'in_the_last_n_days',
  ],
})
const SCOPE_SPELLINGS = aliases<Scope>({
  app: ['application', 'serviceapplication', 'service_application', 'app_level'],
  org: ['organization', 'organisation', 'org_level'],
})
const DATE_TYPE_SPELLINGS = aliases<DateType>({
  string: ['text', 'str'],
  number: ['int', 'integer', 'numeric', 'float', 'decimal', 'long'],
  date: ['datetime', 'date_time', 'timestamp', 'absolute', 'relative', 'calendar_date'],
})
const DIMENSION_SPELLINGS = new Map<string, string>([
  ['app_ver', 'app_version'],
  ['appversion', 'app_version'],
  ['os_ver', 'os_version'],
  ['osversion', 'os_version'],
  ['timezone', 'device_timezone'],
  ['time_zone', 'device_timezone'],
  ['device_time_zone', 'device_timezone'],
  ['device_model', 'model'],
  ['device_country', 'country'],
  ['device_language', 'language'],
  ['device_platform', 'platform'],
])

// ---------------------------------------------------------------------------------------------
// Field schemas

const fail = (ctx: z.RefinementCtx, message: string, input: unknown) => {
  ctx.addIssue({ code: 'custom', message, input })
  return z.NEVER
}

/** A string naming one of a set, in any known spelling. */
function spelled<T extends string>(what: string, map: Map<string, T>, canonical: readonly string[]) {
  const expected = `one of ${canonical.join(', ')}`
  return z
    .string({
      error: (iss) =>
        iss.input === undefined ? `${what} is required` : `${what} must be a string, ${expected}`,
    })
    .transform(
      (s, ctx): T =>
        map.get(spelling(s)) ?? fail(ctx, `unknown ${what} "${s.slice(0, 64)}": expected ${expected}`, s),
    )
}

const groupOperator = (what: string) =>
  z.preprocess((v) => v ?? 'and', spelled(what, GROUP_SPELLINGS, GROUP_OPERATORS))

/** An integer, also sent as integer text ("30"). */
function integer(what: string, min: number, max: number) {
  return z.preprocess(
    (v) => (typeof v === 'string' && /^\s*-?\d{1,16}\s*$/.test(v) ? Number(v) : v),
    z
      .number({
        error: (iss) => (iss.input === undefined ? `${what} is required` : `${what} must be an integer`),
      })
      .int({ error: `${what} must be an integer` })
      .min(min, { error: `${what} must be at least ${min}` })
      .max(max, { error: `${what} must be at most ${max}` }),
  )
}

function name(what: string) {
  return z
    .string({
      error: (iss) =>
        iss.input === undefined || iss.input === null ? `${what} is required` : `${what} must be a string`,
    })
    .trim()
    .min(1, { error: `${what} must not be empty` })
    .refine((s) => charsAtMost(s, AUDIENCE_LIMITS.maxNameChars), {
      error: `${what} must be at most ${AUDIENCE_LIMITS.maxNameChars} characters`,
    })
}

const valueText = z
  .union([z.string(), z.number(), z.boolean()], { error: 'a value must be a string or a number' })
  .transform((v) => String(v))
  .refine((s) => charsAtMost(s, AUDIENCE_LIMITS.maxValueChars), {
    error: `a value must be at most ${AUDIENCE_LIMITS.maxValueChars} characters`,
  })

/** `values` as sent: an array, one scalar, or null / absent (no values). */
const values = z.preprocess(
  (v): unknown[] => (v === undefined || v === null ? [] : Array.isArray(v) ? (v as unknown[]) : [v]),
  z.array(valueText).max(AUDIENCE_LIMITS.maxValuesPerFilter, {
    error: `at most ${AUDIENCE_LIMITS.maxValuesPerFilter} values`,
  }),
)

/** Checks the number of values an operator takes; `at` names the field the issue points at. */
function checkValueCount(op: CriterionOperator, vals: string[], ctx: z.RefinementCtx, at: string) {
  const add = (message: string) => ctx.addIssue({ code: 'custom', message, path: [at], input: vals })
  if (op === 'is_defined' || op === 'is_not_defined') return
  if (op === 'between') {
    if (vals.length !== 2) add(`${op} takes exactly two values (low and high), got ${vals.length}`)
  } else if (isComparison(op) || op === 'within_last_days') {
    if (vals.length !== 1) add(`${op} takes exactly one value, got ${vals.length}`)
  } else if (vals.length === 0) add(`${op} takes at least one value`)
}

/** Both bounds in order, compared as the operator will compare them. */
function sortedPair(vals: string[], numeric: boolean): string[] {
  const [a = '', b = ''] = vals
  const aFirst = numeric ? Number(a) <= Number(b) : Buffer.compare(Buffer.from(a), Buffer.from(b)) <= 0
  return aFirst ? [a, b] : [b, a]
}

// ---------------------------------------------------------------------------------------------
// Behavior

const filterSchema = z
  .object(
    {
      dimension_name: name('dimension_name'),
      operator: spelled('operator', FILTER_SPELLINGS, FILTER_OPERATORS),
      values: values.optional(),
      value: values.optional(),
    },
    { error: 'a filter must be an object' },
  )
  .superRefine((f, ctx) => {
    const useValue = !f.values?.length && f.value !== undefined
    checkValueCount(f.operator, (useValue ? f.value : f.values) ?? [], ctx, useValue ? 'value' : 'values')
  })
  .transform((f): Filter => {
    const raw = f.values?.length ? f.values : (f.value ?? [])
    const dim = DIMENSION_SPELLINGS.get(spelling(f.dimension_name)) ?? f.dimension_name
    const canonicalDim = (EVENT_DEVICE_DIMENSIONS as readonly string[]).includes(spelling(dim))
      ? spelling(dim)
      : dim
    const vals =
      f.operator === 'is_defined' || f.operator === 'is_not_defined'
        ? []
        : f.operator === 'between'
          ? sortedPair(raw, raw.every(isNumericText))
          : raw
    return { dimension_name: canonicalDim, operator: f.operator, values: vals }
  })

const conditionsSchema = z.preprocess(
  (v) => v ?? { operator: 'and', filters: [] },
  z.object(
    {
      operator: groupOperator('conditions.operator'),
      filters: z.preprocess(
        (v) => v ?? [],
        z.array(filterSchema, { error: 'filters must be an array' }).max(AUDIENCE_LIMITS.maxFiltersPerRule, {
          error: `at most ${AUDIENCE_LIMITS.maxFiltersPerRule} filters per rule`,
        }),
      ),
    },
    { error: 'conditions must be an object' },
  ),
)

const windowShape = 'neg_time_window must be an array of two integers [from, to] (days ago)'
const window = z.preprocess(
  (v) => v ?? null,
  z
    .array(integer('neg_time_window bound', -AUDIENCE_LIMITS.maxDays, AUDIENCE_LIMITS.maxDays), {
      error: windowShape,
    })
    .length(2, { error: windowShape })
    .transform((w): [number, number] => [w[0] ?? 0, w[1] ?? 0])
    .nullable(),
)

const ruleSchema = z
  .object(
    {
      rule_type: z.preprocess((v) => v ?? 'event', spelled('rule_type', RULE_TYPE_SPELLINGS, RULE_TYPES)),
      event_name: z.preprocess((v) => (v === '' ? null : v), name('event_name').nullish()),
      count: z.preprocess((v) => v ?? null, integer('count', 0, AUDIENCE_LIMITS.maxCount).nullable()),
      count_operator: z.preprocess(
        (v) => v ?? null,
        spelled('count_operator', COUNT_SPELLINGS, COUNT_OPERATORS).nullable(),
      ),
      conditions: conditionsSchema,
      neg_time_window: window,
    },
    { error: 'a rule must be an object' },
  )
  .superRefine((r, ctx) => {
    const isEvent = r.rule_type === 'event' || r.rule_type === 'not-event'
    if (isEvent && !r.event_name)
      ctx.addIssue({
        code: 'custom',
        message: `event_name is required for a ${r.rule_type} rule`,
        path: ['event_name'],
        input: r.event_name,
      })
    if (r.rule_type === 'first-session' && r.count !== null)
      ctx.addIssue({
        code: 'custom',
        message: 'a first-session rule takes no count',
        path: ['count'],
        input: r.count,
      })
    if (!isEvent)
      r.conditions.filters.forEach((f, i) => {
        const dim = f.dimension_name
        if (!(SESSION_DIMENSIONS as readonly string[]).includes(dim))
          ctx.addIssue({
            code: 'custom',
            message: `a ${r.rule_type} rule can filter only on ${SESSION_DIMENSIONS.join(', ')}, not "${dim.slice(0, 64)}"`,
            path: ['conditions', 'filters', i, 'dimension_name'],
            input: dim,
          })
      })
  })
  .transform((r): BehaviorRule => {
    const isEvent = r.rule_type === 'event' || r.rule_type === 'not-event'
    let win: [number, number] | null = null
    if (r.neg_time_window) {
      const a = Math.abs(r.neg_time_window[0])
      const b = Math.abs(r.neg_time_window[1])
      win = [Math.max(a, b), Math.min(a, b)]
    }
    return {
      rule_type: r.rule_type,
      event_name: isEvent ? (r.event_name ?? null) : null,
      count: r.count,
      count_operator: r.count_operator ?? 'at_least',
      conditions: r.conditions,
      neg_time_window: win,
    }
  })

const behaviorSchema = z.object(
  {
    days: z.preprocess((v) => v ?? AUDIENCE_LIMITS.defaultDays, integer('days', 1, AUDIENCE_LIMITS.maxDays)),
    behavior_rule_operator: groupOperator('behavior_rule_operator'),
    rules: z.preprocess(
      (v) => v ?? [],
      z
        .array(ruleSchema, { error: 'rules must be an array' })
        .max(AUDIENCE_LIMITS.maxRules, { error: `at most ${AUDIENCE_LIMITS.maxRules} rules` }),
    ),
  },
  { error: 'behavior must be an object' },
)

// ---------------------------------------------------------------------------------------------
// Profile

const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?$/

/** The calendar date as written (`YYYY-MM-DD`), or null when the text names no real day. */
function dateOf(s: string): string | null {
  const m = DATE_TEXT.exec(s.trim())
  if (!m) return null
  const [, y, mo, d] = m
  const date = new Date(`${y}-${mo}-${d}T00:00:00Z`)
  if (Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== `${y}-${mo}-${d}`) return null
  return `${y}-${mo}-${d}`
}

interface LooseCriterion {
  key: string
  scope: Scope
  date_type: DateType | null
  operator: CriterionOperator
  values: string[]
}

/** The comparison type a criterion uses when `date_type` is not given. */
function inferDateType(op: CriterionOperator, vals: string[]): DateType {
  if (op === 'before' || op === 'after' || op === 'within_last_days') return 'date'
  if (isComparison(op) && vals.length > 0 && vals.every(isNumericText)) return 'number'
  return 'string'
}

/** Cross-field checks of a criterion, then its canonical form. */
function finishCriterion(c: LooseCriterion, ctx: z.RefinementCtx, valuesField: string): ProfileCriterion {
  const issue = (path: string, message: string) =>
    ctx.addIssue({ code: 'custom', message, path: [path], input: c })
  checkValueCount(c.operator, c.values, ctx, valuesField)
  let type = c.date_type ?? inferDateType(c.operator, c.values)
  // A text comparison whose values are all numbers compares numbers (docs: "Numbers and text").
  if (type === 'string' && isComparison(c.operator) && c.values.length > 0 && c.values.every(isNumericText))
    type = 'number'
  let vals = c.operator === 'is_defined' || c.operator === 'is_not_defined' ? [] : c.values
  if ((c.operator === 'before' || c.operator === 'after') && type !== 'date')
    issue('date_type', `${c.operator} compares dates: date_type must be date`)
  if (c.operator === 'within_last_days') {
    const n = vals[0] ?? ''
    if (vals.length === 1 && (!/^\d{1,6}$/.test(n) || Number(n) > AUDIENCE_LIMITS.maxWithinDays))
      issue(valuesField, `within_last_days takes a number of days from 0 to ${AUDIENCE_LIMITS.maxWithinDays}`)
    else vals = [String(Number(n))]
    type = 'date'
  } else if (type === 'date' && vals.length > 0) {
    const dates = vals.map(dateOf)
    const bad = vals.find((_v, i) => dates[i] === null)
    if (bad !== undefined) issue(valuesField, `"${bad.slice(0, 64)}" is not a date (YYYY-MM-DD)`)
    else vals = dates as string[]
  } else if (type === 'number' && isComparison(c.operator)) {
    const bad = vals.find((v) => !isNumericText(v))
    if (bad !== undefined) issue(valuesField, `"${bad.slice(0, 64)}" is not a number`)
  }
  if (c.operator === 'between' && vals.length === 2) vals = sortedPair(vals, type === 'number')
  return { key: c.key, scope: c.scope, date_type: type, operator: c.operator, values: vals }
}

const criterionSchema = z
  .object(
    {
      key: name('key'),
      scope: z.preprocess((v) => v ?? 'app', spelled('scope', SCOPE_SPELLINGS, SCOPES)),
      date_type: z.preprocess(
        (v) => v ?? null,
        spelled('date_type', DATE_TYPE_SPELLINGS, DATE_TYPES).nullable(),
      ),
      operator: spelled('operator', CRITERION_SPELLINGS, CRITERION_OPERATORS),
      values: values.optional(),
      value: values.optional(),
    },
    { error: 'a criterion must be an object' },
  )
  .transform((c, ctx) => {
    const useValue = !c.values?.length && c.value !== undefined
    return finishCriterion(
      {
        key: c.key,
        scope: c.scope,
        date_type: c.date_type,
        operator: c.operator,
        values: (useValue ? c.value : c.values) ?? [],
      },
      ctx,
      useValue ? 'value' : 'values',
    )
  })

const profileSchema = z.object(
  {
    operator: groupOperator('operator'),
    criteria: z.preprocess(
      (v) => v ?? [],
      z
        .array(criterionSchema, { error: 'criteria must be an array' })
        .max(AUDIENCE_LIMITS.maxCriteria, { error: `at most ${AUDIENCE_LIMITS.maxCriteria} criteria` }),
    ),
  },
  { error: 'profile must be an object' },
)

// ---------------------------------------------------------------------------------------------
// target_rules

export const targetRulesSchema = z
  .object(
    {
      behavior_profile_operator: groupOperator('behavior_profile_operator'),
      targeting_type: z.preprocess(
        (v) => v ?? 'install_id',
        spelled('targeting_type', TARGETING_SPELLINGS, TARGETING_TYPES),
      ),
      behavior: z.preprocess((v) => v ?? null, behaviorSchema.nullable()),
      profile: z.preprocess((v) => v ?? null, profileSchema.nullable()),
      static: z
        .object(
          {
            lists: z
              .array(z.string().regex(LIST_ID, { error: 'a list id is 1..64 of A-Z a-z 0-9 _ -' }), {
                error: 'lists must be an array of list ids',
              })
              .max(MAX_STATIC_LISTS, { error: `at most ${MAX_STATIC_LISTS} lists` }),
          },
          { error: 'static must be an object' },
        )
        .nullish(),
    },
    { error: 'target_rules must be an object' },
  )
  .transform((t): TargetRules => ({
    behavior_profile_operator: t.behavior_profile_operator,
    targeting_type: t.targeting_type,
    behavior: t.behavior && t.behavior.rules.length > 0 ? t.behavior : null,
    profile: t.profile && t.profile.criteria.length > 0 ? t.profile : null,
    ...(t.static && { static: { lists: [...new Set(t.static.lists)] } }),
  }))

/** A JSON path: root, then `.field` and `[index]` segments. */
export function jsonPath(root: string, path: readonly PropertyKey[]): string {
  let out = root
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`
    else if (typeof seg === 'string' && /^[A-Za-z_$][\w$]*$/.test(seg)) out += out === '' ? seg : `.${seg}`
    else out += `[${JSON.stringify(String(seg))}]`
  }
  return out
}

function issuesOf(error: z.ZodError, root: string): RuleIssue[] {
  return error.issues.map((i) => ({ path: jsonPath(root, i.path), message: i.message }))
}

/** Validates and normalises `target_rules`; issue paths begin with `target_rules`. */
export function parseTargetRules(input: unknown): ParseResult<TargetRules> {
  const result = targetRulesSchema.safeParse(input)
  return result.success
    ? { ok: true, rules: result.data }
    : { ok: false, issues: issuesOf(result.error, 'target_rules') }
}

// ---------------------------------------------------------------------------------------------
// The push endpoint's profile target

const PUSH_SCOPES = aliases<Scope>({
  // 'LocalyticsApplication': what a Java client of the original push API sends for app scope.
  app: ['serviceapplication', 'service_application', 'application', 'localyticsapplication'],
  org: ['organization', 'organisation'],
})
const PUSH_TYPES = aliases<DateType>({
  string: ['str', 'text'],
  number: ['int', 'integer'],
  date: ['datetime'],
})
const PUSH_OPS = aliases<CriterionOperator>({
  is_one_of: ['in'],
  is_not_one_of: ['not_in'],
  is_not_defined: ['is_null'],
  is_defined: ['is_not_null'],
  less_than: ['<'],
  greater_than: ['>'],
  less_than_or_equal: ['<='],
  greater_than_or_equal: ['>='],
  between: [],
})
const PUSH_OP_NAMES = ['in', 'not_in', 'is_null', 'is_not_null', '<', '>', '<=', '>=', 'between']

const pushCriterionSchema = z
  .object(
    {
      key: name('key'),
      scope: spelled('scope', PUSH_SCOPES, ['ServiceApplication', 'Organization']),
      type: spelled('type', PUSH_TYPES, ['string', 'int', 'date']),
      op: spelled('op', PUSH_OPS, PUSH_OP_NAMES),
      values: values.optional(),
    },
    { error: 'a criterion must be an object' },
  )
  .superRefine((c, ctx) => {
    if (c.type === 'string' && isComparison(c.op) && c.op !== 'between')
      ctx.addIssue({
        code: 'custom',
        message: `op ${c.op} applies to int and date types only`,
        path: ['op'],
        input: c.op,
      })
    if (c.type === 'string' && c.op === 'between')
      ctx.addIssue({
        code: 'custom',
        message: 'op between applies to int and date types only',
        path: ['op'],
        input: c.op,
      })
  })
  .transform((c, ctx) =>
    finishCriterion(
      { key: c.key, scope: c.scope, date_type: c.type, operator: c.op, values: c.values ?? [] },
      ctx,
      'values',
    ),
  )

const pushProfileTargetSchema = z.object(
  {
    profile: z.object(
      {
        op: groupOperator('op'),
        criteria: z
          .array(pushCriterionSchema, {
            error: (iss) => (iss.input === undefined ? 'criteria is required' : 'criteria must be an array'),
          })
          .min(1, { error: 'criteria must not be empty' })
          .max(AUDIENCE_LIMITS.maxCriteria, { error: `at most ${AUDIENCE_LIMITS.maxCriteria} criteria` }),
      },
      { error: (iss) => (iss.input === undefined ? 'profile is required' : 'profile must be an object') },
    ),
  },
  { error: 'a profile target must be an object with profile' },
)

/**
 * The push request's `profile` target (`{profile: {criteria: [{key, scope, type, op, values}], op}}`)
 * in the canonical criteria form, so it compiles with `compileProfileMembers`. Issue paths begin
 * with `root` (the caller's path of the target, e.g. `messages[0].target`).
 */
export function parsePushProfileTarget(input: unknown, root = 'target'): ParseResult<ProfileRules> {
  const result = pushProfileTargetSchema.safeParse(input)
  if (!result.success) return { ok: false, issues: issuesOf(result.error, root) }
  return { ok: true, rules: { operator: result.data.profile.op, criteria: result.data.profile.criteria } }
}

/** Target rules holding only a profile part (the push endpoint's profile target). */
export function profileOnlyRules(profile: ProfileRules): TargetRules {
  return { behavior_profile_operator: 'and', targeting_type: 'install_id', behavior: null, profile }
}
