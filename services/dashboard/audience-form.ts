/**
 * The audience builder's form and the audience API's `target_rules` (docs/audiences.md), both ways.
 * Pure. Every input is named by the JSON path of what it fills, without `target_rules.`
 * (`behavior.rules[0].event_name`), so an API message naming `target_rules.behavior.rules[0].event_name`
 * lands under that input. Rows left empty are skipped; the paths of the API's messages are then
 * mapped back to the rows of the form.
 */

import { COUNT_OPERATORS as API_COUNT_OPERATORS, type CountOperator } from '../../schemas/audiences.ts'

export { CRITERION_OPERATORS, FILTER_OPERATORS, RULE_TYPES } from '../../schemas/audiences.ts'

/** The API's count operators, in the order the form offers them: the usual one first. */
export const COUNT_OPERATORS: readonly CountOperator[] = [
  'at_least',
  ...API_COUNT_OPERATORS.filter((o) => o !== 'at_least'),
]

/** Blank rows the builder offers below the rules and criteria an audience has. */
export const BLANK_ROWS = 2

export interface FilterRow {
  dimension_name: string
  operator: string
  values: string
}
export interface RuleRow {
  rule_type: string
  event_name: string
  count_operator: string
  count: string
  days_from: string
  days_to: string
  filter_operator: string
  filters: FilterRow[]
}
export interface CriterionRow {
  key: string
  scope: string
  operator: string
  values: string
}
/** The builder's form, field by field (text as typed). */
export interface AudienceForm {
  name: string
  behavior_profile_operator: string
  days: string
  behavior_rule_operator: string
  profile_operator: string
  rules: RuleRow[]
  criteria: CriterionRow[]
}

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
const text = (v: unknown): string =>
  v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v)
const list = (v: unknown): string =>
  Array.isArray(v) ? v.map(text).join(', ') : v === undefined || v === null ? '' : text(v)

export const blankRule = (): RuleRow => ({
  rule_type: '',
  event_name: '',
  count_operator: 'at_least',
  count: '',
  days_from: '',
  days_to: '',
  filter_operator: 'and',
  filters: [{ dimension_name: '', operator: 'is_one_of', values: '' }],
})
export const blankCriterion = (): CriterionRow => ({
  key: '',
  scope: 'app',
  operator: 'is_one_of',
  values: '',
})

/** The form of an audience's rules as the API answers them (the spelling its client sent). */
export function formOfRules(name: string, rules: unknown): AudienceForm {
  const r = isObject(rules) ? rules : {}
  const behavior = isObject(r.behavior) ? r.behavior : {}
  const profile = isObject(r.profile) ? r.profile : {}
  const ruleRows = (Array.isArray(behavior.rules) ? behavior.rules : [])
    .filter(isObject)
    .map((rule): RuleRow => {
      const conditions = isObject(rule.conditions) ? rule.conditions : {}
      const filters = (Array.isArray(conditions.filters) ? conditions.filters : []).filter(isObject)
      const window = Array.isArray(rule.neg_time_window) ? rule.neg_time_window : []
      return {
        rule_type: text(rule.rule_type) || 'event',
        event_name: text(rule.event_name),
        count_operator: text(rule.count_operator) || 'at_least',
        count: text(rule.count),
        days_from: text(window[0]),
        days_to: text(window[1]),
        filter_operator: text(conditions.operator) || 'and',
        filters: [
          ...filters.map((f) => ({
            dimension_name: text(f.dimension_name),
            operator: text(f.operator),
            values: list(f.values ?? f.value),
          })),
          ...(filters.length === 0 ? blankRule().filters : []),
        ],
      }
    })
  const criteria = (Array.isArray(profile.criteria) ? profile.criteria : [])
    .filter(isObject)
    .map((c): CriterionRow => ({
      key: text(c.key),
      scope: text(c.scope) || 'app',
      operator: text(c.operator),
      values: list(c.values ?? c.value),
    }))
  return {
    name,
    behavior_profile_operator: text(r.behavior_profile_operator) || 'and',
    days: text(behavior.days) || '30',
    behavior_rule_operator: text(behavior.behavior_rule_operator) || 'and',
    profile_operator: text(profile.operator) || 'and',
    rules: [...ruleRows, ...Array.from({ length: BLANK_ROWS }, blankRule)],
    criteria: [...criteria, ...Array.from({ length: BLANK_ROWS }, blankCriterion)],
  }
}

/** The form as posted (flat names: `behavior.rules[0].event_name`). */
export function formOfPost(form: Record<string, unknown>): AudienceForm {
  const f = (name: string) => {
    const v = form[name]
    return typeof v === 'string' ? v.trim() : ''
  }
  const rows = (prefix: string) => {
    let n = 0
    const pattern = new RegExp(`^${prefix.replace(/[.[\]]/g, '\\$&')}\\[(\\d+)\\]`)
    for (const key of Object.keys(form)) {
      const m = pattern.exec(key)
      if (m) n = Math.max(n, Number(m[1]) + 1)
    }
    return Math.min(n, 50)
  }
  const rules = Array.from({ length: rows('behavior.rules') }, (_, i): RuleRow => {
    const p = `behavior.rules[${i}]`
    const filters = Array.from({ length: Math.max(1, rows(`${p}.conditions.filters`)) }, (_, j) => {
      const q = `${p}.conditions.filters[${j}]`
      return {
        dimension_name: f(`${q}.dimension_name`),
        operator: f(`${q}.operator`),
        values: f(`${q}.values`),
      }
    })
    return {
      rule_type: f(`${p}.rule_type`),
      event_name: f(`${p}.event_name`),
      count_operator: f(`${p}.count_operator`),
      count: f(`${p}.count`),
      days_from: f(`${p}.neg_time_window.from`),
      days_to: f(`${p}.neg_time_window.to`),
      filter_operator: f(`${p}.conditions.operator`) || 'and',
      filters,
    }
  })
  const criteria = Array.from({ length: rows('profile.criteria') }, (_, i): CriterionRow => {
    const p = `profile.criteria[${i}]`
    return {
      key: f(`${p}.key`),
      scope: f(`${p}.scope`),
      operator: f(`${p}.operator`),
      values: f(`${p}.values`),
    }
  })
  return {
    name: f('name'),
    behavior_profile_operator: f('behavior_profile_operator') || 'and',
    days: f('behavior.days'),
    behavior_rule_operator: f('behavior.behavior_rule_operator') || 'and',
    profile_operator: f('profile.operator') || 'and',
    rules,
    criteria,
  }
}

const values = (typed: string): string[] =>
  typed === ''
    ? []
    : typed
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '')
/** A number as typed, or the text itself (the API names what is wrong with it). */
const numberOr = (typed: string): unknown => (/^-?\d+$/.test(typed) ? Number(typed) : typed)

/**
 * The `target_rules` of the form, and where each row the API will name sits in the form (rows left
 * blank are skipped: a rule without a type, a filter or criterion without a name).
 */
export function rulesOfForm(form: AudienceForm): {
  rules: Json
  ruleRows: number[]
  filterRows: number[][]
  criterionRows: number[]
} {
  const ruleRows: number[] = []
  const filterRows: number[][] = []
  const rules: Json[] = []
  form.rules.forEach((row, i) => {
    if (row.rule_type === '') return
    const kept = row.filters.flatMap((f, j) => (f.dimension_name === '' ? [] : [j]))
    const rule: Json = { rule_type: row.rule_type }
    if (row.rule_type === 'event' || row.rule_type === 'not-event') rule.event_name = row.event_name
    if (row.rule_type !== 'first-session') {
      rule.count_operator = row.count_operator
      if (row.count !== '') rule.count = numberOr(row.count)
    }
    if (row.days_from !== '' || row.days_to !== '')
      rule.neg_time_window = [numberOr(row.days_from || '0'), numberOr(row.days_to || '0')]
    if (kept.length > 0)
      rule.conditions = {
        operator: row.filter_operator,
        filters: kept.map((j) => {
          const f = row.filters[j]!
          return { dimension_name: f.dimension_name, operator: f.operator, values: values(f.values) }
        }),
      }
    ruleRows.push(i)
    filterRows.push(kept)
    rules.push(rule)
  })
  const criterionRows: number[] = []
  const criteria: Json[] = []
  form.criteria.forEach((row, i) => {
    if (row.key === '') return
    criterionRows.push(i)
    criteria.push({ key: row.key, scope: row.scope, operator: row.operator, values: values(row.values) })
  })
  const out: Json = {
    behavior_profile_operator: form.behavior_profile_operator,
    targeting_type: 'install_id',
  }
  if (rules.length > 0)
    out.behavior = {
      days: numberOr(form.days || '30'),
      behavior_rule_operator: form.behavior_rule_operator,
      rules,
    }
  if (criteria.length > 0) out.profile = { operator: form.profile_operator, criteria }
  return { rules: out, ruleRows, filterRows, criterionRows }
}

/**
 * The API's messages by the form field they name: `target_rules.behavior.rules[1].event_name: …`
 * goes under the input of that rule's row (its index in the form), `name: …` under the name, the
 * rest under ''. Each message keeps its words, without the path it was filed under.
 */
export function errorsOfForm(
  messages: readonly string[],
  fields: readonly string[],
  rows: Pick<ReturnType<typeof rulesOfForm>, 'ruleRows' | 'filterRows' | 'criterionRows'>,
): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const message of messages) {
    const m = /^([A-Za-z0-9_.[\]]+): (.*)$/.exec(message)
    let path = (m?.[1] ?? '').replace(/^target_rules\.?/, '')
    const filter = /^behavior\.rules\[(\d+)\]\.conditions\.filters\[(\d+)\]/.exec(path)
    if (filter) {
      const rule = Number(filter[1])
      const row = `behavior.rules[${rows.ruleRows[rule] ?? rule}].conditions.filters[${rows.filterRows[rule]?.[Number(filter[2])] ?? filter[2]}]`
      path = row + path.slice(filter[0].length)
    } else
      path = path
        .replace(
          /^behavior\.rules\[(\d+)\]/,
          (_, r: string) => `behavior.rules[${rows.ruleRows[Number(r)] ?? r}]`,
        )
        .replace(
          /^profile\.criteria\[(\d+)\]/,
          (_, c: string) => `profile.criteria[${rows.criterionRows[Number(c)] ?? c}]`,
        )
    const field =
      fields.find((f) => path === f || path.startsWith(`${f}.`) || path.startsWith(`${f}[`)) ??
      // A whole rule or criterion named: its first input.
      fields.find((f) => f.startsWith(`${path}.`)) ??
      ''
    ;(out[field] ??= []).push(field === '' || !m ? message : m[2]!)
  }
  return out
}

/** Every input name of the form, in order (where an error may be shown). */
export function fieldNames(form: AudienceForm): string[] {
  const names = ['name', 'behavior_profile_operator', 'behavior.days', 'behavior.behavior_rule_operator']
  form.rules.forEach((rule, i) => {
    const p = `behavior.rules[${i}]`
    names.push(
      `${p}.rule_type`,
      `${p}.event_name`,
      `${p}.count_operator`,
      `${p}.count`,
      `${p}.neg_time_window.from`,
      `${p}.neg_time_window.to`,
      `${p}.conditions.operator`,
    )
    rule.filters.forEach((_, j) => {
      const q = `${p}.conditions.filters[${j}]`
      names.push(`${q}.dimension_name`, `${q}.operator`, `${q}.values`)
    })
  })
  names.push('profile.operator')
  form.criteria.forEach((_, i) => {
    const p = `profile.criteria[${i}]`
    names.push(`${p}.key`, `${p}.scope`, `${p}.operator`, `${p}.values`)
  })
  return names
}
