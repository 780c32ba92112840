import {
  DISABLED_PUSH_STATUS_PREFIXES,
  NUMERIC_TEXT,
  dimensionSource,
  isNumericText,
  profileOnlyRules,
  type BehaviorRule,
  type CountOperator,
  type Filter,
  type GroupOperator,
  type ProfileCriterion,
  type ProfileRules,
  type StaticRules,
  type TargetRules,
} from '../../schemas/audiences.ts'

/**
 * The audience compiler: canonical target rules (schemas/audiences.ts) to one parameterised
 * ClickHouse query. Pure: no I/O, no clock (the caller's `now`), and no user value in the SQL text
 * (every value is a {pN:Type} parameter; identifiers come from fixed lists).
 *
 * Shape of the query (one query whatever the number of rules):
 *   devices FINAL of the app (the candidates: one row per install)
 *   LEFT JOIN one GROUP BY install_uuid over the UNION ALL of each event rule's rows of
 *             `events` (app_id, its event_name and window: the primary key; its filters), with
 *             one countIf per event rule; an INNER JOIN with the event rules as HAVING when
 *             every member must pass them
 *   LEFT JOIN one GROUP BY install_uuid over `sessions` of the app: last session, seen in 30
 *             days, and one uniqExactIf / first-session flag per session rule (counts read
 *             only the sessions in a counted window, unless a first-session rule needs all)
 *   LEFT JOIN per profile db used (app, org): one row per live profile with one flag per criterion
 *   WHERE the rules' boolean expression.
 * Missing joined rows read as zeros (join_use_nulls = 0): no events means a count of 0.
 * docs/audiences.md ("Target rules") states the semantics this implements.
 */

export interface AudienceContext {
  appId: string
  appProfiledbId: number
  orgProfiledbId: number
  /** Milliseconds since the epoch: every window is relative to it. */
  now: number
}

export interface CompiledQuery {
  sql: string
  params: Record<string, unknown>
}

export interface MembersPage {
  /** Only installs whose install_uuid sorts after this one (keyset paging). */
  afterInstall?: string
  limit?: number
}

const DAY_MS = 86_400_000
const SEEN_DAYS = 30

/** Collects query parameters and hands out their placeholders. */
class Params {
  readonly values: Record<string, unknown> = {}
  private n = 0
  bind(type: string, value: unknown): string {
    const name = `p${this.n++}`
    this.values[name] = value
    return `{${name}:${type}}`
  }
}

const msParam = (params: Params, ms: number) => `fromUnixTimestamp64Milli(${params.bind('Int64', ms)}, 'UTC')`

// Fixed regex of numeric text, as SQL literal (no user input: it is a constant of the schema).
const NUMERIC_RE_SQL = `'${NUMERIC_TEXT.source.replace(/\\/g, '\\\\')}'`

function combine(parts: string[], op: GroupOperator): string {
  if (parts.length === 0) return '1'
  if (parts.length === 1) return parts[0] ?? '1'
  return parts.map((p) => `(${p})`).join(op === 'and' ? ' AND ' : ' OR ')
}

interface Window {
  from: number
  to: number
}

function ruleWindow(rule: BehaviorRule, days: number, now: number): Window {
  if (rule.neg_time_window) {
    const [from, to] = rule.neg_time_window
    return { from: now - from * DAY_MS, to: now - to * DAY_MS }
  }
  return { from: now - days * DAY_MS, to: now }
}

// ---------------------------------------------------------------------------------------------
// Filters over an event or session row

/** A comparison of `v` (a String expression) with the filter's values: numeric when they all are. */
function comparison(params: Params, v: string, op: Filter['operator'], values: string[]): string {
  const numeric = values.every(isNumericText)
  const bound = (i: number) =>
    numeric ? params.bind('Float64', Number(values[i])) : params.bind('String', values[i] ?? '')
  const x = numeric ? `toFloat64OrZero(${v})` : v
  const guard = numeric ? `match(${v}, ${NUMERIC_RE_SQL}) AND ` : ''
  switch (op) {
    case 'greater_than':
      return `${guard}${x} > ${bound(0)}`
    case 'less_than':
      return `${guard}${x} < ${bound(0)}`
    case 'greater_than_or_equal':
      return `${guard}${x} >= ${bound(0)}`
    case 'less_than_or_equal':
      return `${guard}${x} <= ${bound(0)}`
    default:
      return `${guard}${x} >= ${bound(0)} AND ${x} <= ${bound(1)}`
  }
}

function filterSql(params: Params, rule: BehaviorRule, f: Filter): string {
  const source = dimensionSource(rule.rule_type, f.dimension_name)
  let v: string
  let defined: string
  if (source.kind === 'column') {
    // The column name comes from the schema's fixed lists, never from the request.
    v = source.column
    defined = `${v} != ''`
  } else {
    const key = params.bind('String', source.key)
    v = `attributes[${key}]`
    defined = `mapContains(attributes, ${key})`
  }
  switch (f.operator) {
    case 'is_defined':
      return defined
    case 'is_not_defined':
      return `NOT (${defined})`
    case 'is_one_of':
      return `${defined} AND ${v} IN ${params.bind('Array(String)', f.values)}`
    case 'is_not_one_of':
      return `NOT (${defined} AND ${v} IN ${params.bind('Array(String)', f.values)})`
    case 'contains':
      return `${defined} AND arrayExists(n -> position(${v}, n) > 0, ${params.bind('Array(String)', f.values)})`
    case 'does_not_contain':
      return `NOT (${defined} AND arrayExists(n -> position(${v}, n) > 0, ${params.bind('Array(String)', f.values)}))`
    default:
      return `${defined} AND ${comparison(params, v, f.operator, f.values)}`
  }
}

function filtersSql(params: Params, rule: BehaviorRule): string {
  const parts = rule.conditions.filters.map((f) => filterSql(params, rule, f))
  return combine(parts, rule.conditions.operator)
}

function countTest(count: string, rule: BehaviorRule, params: Params): string {
  const positive =
    rule.count === null
      ? `${count} >= 1`
      : `${count} ${COUNT_SQL[rule.count_operator]} ${params.bind('UInt64', rule.count)}`
  return rule.rule_type === 'not-event' || rule.rule_type === 'not-session' ? `NOT (${positive})` : positive
}

const COUNT_SQL: Record<CountOperator, string> = {
  less_than: '<',
  greater_than: '>',
  exactly: '=',
  at_least: '>=',
  at_most: '<=',
}

// ---------------------------------------------------------------------------------------------
// Profile criteria over a `profiles` row (attributes JSON, attribute_types map)

/** Whether a criterion holds for an install with no profile (or no customer): an absent attribute. */
function holdsWhenAbsent(c: ProfileCriterion): boolean {
  return (
    c.operator === 'is_not_defined' || c.operator === 'is_not_one_of' || c.operator === 'does_not_contain'
  )
}

function criterionSql(params: Params, c: ProfileCriterion, today: string): string {
  const key = params.bind('String', c.key)
  const type = `JSONType(attributes, ${key})`
  const defined = `JSONHas(attributes, ${key})`
  // Every value of the attribute as text: a string, an integer, or each element of a set.
  const texts =
    `multiIf(${type} = 'String', [JSONExtractString(attributes, ${key})], ` +
    `${type} IN ('Int64', 'UInt64'), [toString(JSONExtractInt(attributes, ${key}))], ` +
    `${type} = 'Array', arrayMap(x -> if(JSONType(x) = 'String', JSONExtractString(x), toString(JSONExtractInt(x))), JSONExtractArrayRaw(attributes, ${key})), ` +
    `CAST([], 'Array(String)'))`
  const scalar = `${type} IN ('String', 'Int64', 'UInt64')`
  const scalarText = `${texts}[1]`
  switch (c.operator) {
    case 'is_defined':
      return defined
    case 'is_not_defined':
      return `NOT ${defined}`
    case 'is_one_of':
      return `hasAny(${texts}, ${params.bind('Array(String)', c.values)})`
    case 'is_not_one_of':
      return `NOT hasAny(${texts}, ${params.bind('Array(String)', c.values)})`
    case 'contains':
      return `arrayExists(x -> arrayExists(n -> position(x, n) > 0, ${params.bind('Array(String)', c.values)}), ${texts})`
    case 'does_not_contain':
      return `NOT arrayExists(x -> arrayExists(n -> position(x, n) > 0, ${params.bind('Array(String)', c.values)}), ${texts})`
    case 'within_last_days': {
      const days = Number(c.values[0] ?? 0)
      const start = new Date(Date.parse(`${today}T00:00:00Z`) - days * DAY_MS).toISOString().slice(0, 10)
      return (
        `${scalar} AND attribute_types[${key}] = 'date' AND ` +
        `${scalarText} >= ${params.bind('String', start)} AND ${scalarText} <= ${params.bind('String', today)}`
      )
    }
    default: {
      const op = c.operator === 'before' ? 'less_than' : c.operator === 'after' ? 'greater_than' : c.operator
      if (c.date_type === 'date')
        return `${scalar} AND attribute_types[${key}] = 'date' AND ${comparison(params, scalarText, op, c.values)}`
      if (c.date_type === 'number') return `${scalar} AND ${comparison(params, scalarText, op, c.values)}`
      return `${type} = 'String' AND ${comparison(params, scalarText, op, c.values)}`
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The query

interface Built {
  /** The members' FROM … WHERE with every column the outer queries need. */
  from: string
  where: string
  enabledPush: string
  seen: string
}

/** Whether a rule's count test holds for an install with no matching event (a count of 0). */
function holdsAtZero(rule: BehaviorRule): boolean {
  const n = rule.count
  let positive: boolean
  if (n === null) positive = false
  else if (rule.count_operator === 'less_than') positive = 0 < n
  else if (rule.count_operator === 'greater_than') positive = false
  else if (rule.count_operator === 'exactly') positive = n === 0
  else if (rule.count_operator === 'at_least') positive = n === 0
  else positive = true
  return rule.rule_type === 'not-event' || rule.rule_type === 'not-session' ? !positive : positive
}

/**
 * A HAVING for the events GROUP BY that every member passes, or undefined when there is none that
 * leaves out installs without events: the event rules' tests, combined as the rules are, when the
 * whole expression implies them (behavior rules joined by `and`, or by `or` when all are event
 * rules; the profile part, if any, joined by `and`) and they fail at zero counts. Then the events
 * side can be an INNER JOIN of only the installs that pass, instead of a LEFT JOIN of every
 * install with an event.
 */
function eventHaving(
  rules: TargetRules,
  eventRules: { rule: BehaviorRule; alias: string }[],
  params: Params,
): string | undefined {
  const behavior = rules.behavior
  if (!behavior) return undefined
  if (rules.profile && rules.behavior_profile_operator === 'or') return undefined
  const op = behavior.behavior_rule_operator
  if (op === 'or' && eventRules.length < behavior.rules.length) return undefined
  const zeros = eventRules.map(({ rule }) => holdsAtZero(rule))
  const passesAtZero = op === 'and' ? zeros.every(Boolean) : zeros.some(Boolean)
  if (passesAtZero) return undefined
  return combine(
    eventRules.map(({ rule, alias }) => countTest(alias, rule, params)),
    op,
  )
}

/** What a query needs of the sessions: members need every install's last session ever; counts do not. */
type Purpose = 'members' | 'counts'

function build(
  rules: TargetRules,
  ctx: AudienceContext,
  params: Params,
  page: MembersPage,
  purpose: Purpose,
): Built {
  const app = params.bind('String', ctx.appId)
  const behavior = rules.behavior
  const eventRules: { rule: BehaviorRule; alias: string }[] = []
  const sessionRules: { rule: BehaviorRule; alias: string }[] = []
  const ruleTests: string[] = []

  const eventColumns: string[] = []
  const sessionColumns: string[] = []
  // Each event rule's rows, tagged with the rule: a row matching no rule counts for none.
  const eventBranches: string[] = []
  // Each session rule's row condition, for the same narrowing of the sessions.
  const sessionConditions: string[] = []
  let firstSession = false

  for (const [i, rule] of (behavior?.rules ?? []).entries()) {
    const w = ruleWindow(rule, behavior?.days ?? 0, ctx.now)
    const inWindow = (col: string) =>
      `${col} >= ${msParam(params, w.from)} AND ${col} <= ${msParam(params, w.to)}`
    const filters = filtersSql(params, rule)
    if (rule.rule_type === 'event' || rule.rule_type === 'not-event') {
      const alias = `c${i}`
      const name = rule.event_name ?? ''
      const condition = `event_name = ${params.bind('String', name)} AND ${inWindow('event_time')} AND (${filters})`
      // The tag is the rule's index, a number of this code, not a value of the request.
      eventBranches.push(
        `SELECT install_uuid, toUInt8(${i}) AS r FROM events WHERE app_id = ${app} AND ${condition}`,
      )
      eventColumns.push(`countIf(r = ${i}) AS ${alias}`)
      eventRules.push({ rule, alias })
      ruleTests.push(countTest(`ev.${alias}`, rule, params))
    } else if (rule.rule_type === 'first-session') {
      const alias = `f${i}`
      firstSession = true
      sessionColumns.push(
        `toUInt8(countIf(${filters}) > 0 AND ${inWindow(`minIf(started_at, ${filters})`)}) AS ${alias}`,
      )
      sessionRules.push({ rule, alias })
      ruleTests.push(`se.${alias} = 1`)
    } else {
      const alias = `s${i}`
      const condition = `${inWindow('started_at')} AND (${filters})`
      sessionConditions.push(condition)
      sessionColumns.push(`uniqExactIf(session_uuid, ${condition}) AS ${alias}`)
      sessionRules.push({ rule, alias })
      ruleTests.push(countTest(`se.${alias}`, rule, params))
    }
  }

  const seenFrom = msParam(params, ctx.now - SEEN_DAYS * DAY_MS)
  const seenTo = msParam(params, ctx.now)
  const seenCondition = `started_at >= ${seenFrom} AND started_at <= ${seenTo}`
  // Members carry each install's last session ever, and a first-session rule looks at all of an
  // install's sessions; otherwise only the sessions some column counts are read into the GROUP BY.
  const allSessions = purpose === 'members' || firstSession
  const sessions =
    `SELECT install_uuid, ` +
    (allSessions ? `CAST(max(started_at), 'Nullable(DateTime64(3, \\'UTC\\'))') AS last_session_at, ` : '') +
    `toUInt8(countIf(${seenCondition}) > 0) AS seen` +
    sessionColumns.map((c) => `, ${c}`).join('') +
    ` FROM sessions WHERE app_id = ${app}` +
    (allSessions ? '' : ` AND (${combine([seenCondition, ...sessionConditions], 'or')})`) +
    ` GROUP BY install_uuid`

  const joins: string[] = []
  if (eventRules.length > 0) {
    // Each rule reads its own rows (its name and window, which the primary key narrows to the
    // rule's granules; its filters, so only the columns it tests are read, and only there), and
    // the GROUP BY counts each install's rows per rule. When every member must pass the event rules
    // (eventHaving), only the installs that pass leave it, for an INNER JOIN.
    const having = eventHaving(rules, eventRules, params)
    joins.push(
      `${having ? 'INNER' : 'LEFT'} JOIN (SELECT install_uuid, ${eventColumns.join(', ')} ` +
        `FROM (${eventBranches.join(' UNION ALL ')}) ` +
        `GROUP BY install_uuid${having ? ` HAVING ${having}` : ''}) AS ev ON ev.install_uuid = d.install_uuid`,
    )
  }
  joins.push(`LEFT JOIN (${sessions}) AS se ON se.install_uuid = d.install_uuid`)

  const criterionTests: string[] = []
  const profile = rules.profile
  if (profile) {
    const today = new Date(ctx.now).toISOString().slice(0, 10)
    for (const scope of ['app', 'org'] as const) {
      const used = profile.criteria.map((c, i) => ({ c, i })).filter(({ c }) => c.scope === scope)
      if (used.length === 0) continue
      const alias = scope === 'app' ? 'pa' : 'po'
      const db = params.bind('UInt64', scope === 'app' ? ctx.appProfiledbId : ctx.orgProfiledbId)
      const flags = used.map(({ c, i }) => `toUInt8(${criterionSql(params, c, today)}) AS k${i}`)
      joins.push(
        `LEFT JOIN (SELECT customer_id, toUInt8(1) AS present, ${flags.join(', ')} ` +
          `FROM profiles FINAL WHERE profiledb_id = ${db} AND deleted = 0 AND customer_id != '') AS ${alias} ` +
          `ON ${alias}.customer_id = d.customer_id`,
      )
    }
    for (const [i, c] of profile.criteria.entries()) {
      const alias = c.scope === 'app' ? 'pa' : 'po'
      criterionTests.push(`if(${alias}.present = 1, ${alias}.k${i} = 1, ${holdsWhenAbsent(c) ? 1 : 0})`)
    }
  }

  const parts: string[] = []
  if (behavior) parts.push(combine(ruleTests, behavior.behavior_rule_operator))
  if (profile) parts.push(combine(criterionTests, profile.operator))
  const ruled = combine(parts, rules.behavior_profile_operator)
  const where = rules.static ? combine([staticMembership(params, rules.static, ctx), ruled], 'and') : ruled

  const pageFilter =
    page.afterInstall !== undefined ? ` AND install_uuid > ${params.bind('String', page.afterInstall)}` : ''
  const devices =
    `SELECT install_uuid, customer_id, platform, push_token, push_status, device_timezone ` +
    `FROM devices FINAL WHERE app_id = ${app}${pageFilter}`
  const disabled = DISABLED_PUSH_STATUS_PREFIXES.map((p) => `startsWith(lower(d.push_status), '${p}')`).join(
    ' OR ',
  )
  const enabledPush =
    `d.push_token != '' AND NOT (${disabled}) AND d.push_token NOT IN ` +
    `(SELECT push_token FROM invalid_push_tokens WHERE app_id = ${app})`

  return { from: `(${devices}) AS d ${joins.join(' ')}`, where, enabledPush, seen: 'se.seen' }
}

/**
 * A static audience's members: the app's installs named by its lists, by install id, by customer
 * id (every install of that customer), or by e-mail (every install of the customer whose org-level
 * profile has that `$email`). Resolved when the query runs, so a listed customer who installs the
 * app later is a member from then on.
 *
 * An `IN` builds a hash set of its subquery, so testing the installs against a list's identifiers
 * holds the whole list (143 MB for 1,000,000 customer ids) even when the app has 1,000 installs.
 * Each list test is therefore driven from the smaller side, chosen in the query by two counts
 * read from primary keys (the list's rows, the app's device rows): a list no larger than the app
 * is taken whole, as before; a larger one is first narrowed to the app's own identifiers, a set
 * of the app's (the list's rows read by key), the other branch's subquery reading nothing. Either
 * way the sets hold at most about min(list, app), and the answer is the same (docs/imports.md).
 */
function staticMembership(params: Params, rules: StaticRules, ctx: AudienceContext): string {
  const app = params.bind('String', ctx.appId)
  const lists = params.bind('Array(String)', rules.lists)
  const rows = (type: string) =>
    `audience_list_members WHERE app_id = ${app} AND list_id IN ${lists} AND id_type = '${type}'`
  const listed = (type: string) => `(SELECT identifier FROM ${rows(type)})`
  const appDevices = `(SELECT count() FROM devices WHERE app_id = ${app})`
  const listedInApp = (type: string, column: string) => {
    const larger = `(SELECT count() FROM ${rows(type)}) > ${appDevices}`
    return (
      `(SELECT identifier FROM ${rows(type)} AND (NOT ${larger} OR identifier IN ` +
      `(SELECT ${column} FROM devices WHERE app_id = ${app} AND ${larger})))`
    )
  }
  const orgDb = params.bind('UInt64', ctx.orgProfiledbId)
  return (
    `d.install_uuid IN ${listedInApp('install_id', 'install_uuid')} OR (d.customer_id != '' AND ` +
    `(d.customer_id IN ${listedInApp('customer_id', 'customer_id')} ` +
    `OR d.customer_id IN (SELECT customer_id FROM profiles FINAL WHERE profiledb_id = ${orgDb} AND deleted = 0 ` +
    `AND email != '' AND email IN ${listed('email')})))`
  )
}

const SETTINGS = 'SETTINGS join_use_nulls = 0, precise_float_parsing = 1'

/**
 * One row per member install, ordered by install_uuid: install_uuid, customer_id, platform,
 * push_token, push_status, device_timezone, has_push (UInt8), last_session_at (Nullable).
 * `page` pages by keyset: pass the last install_uuid of a page as `afterInstall`.
 */
export function compileMembers(
  rules: TargetRules,
  ctx: AudienceContext,
  page: MembersPage = {},
): CompiledQuery {
  return compileMembersOfAny([rules], ctx, page)
}

/** The columns of a member row (compileMembers), over the FROM of `build`. */
const memberColumns = (b: Built) =>
  `d.install_uuid AS install_uuid, d.customer_id AS customer_id, d.platform AS platform, ` +
  `d.push_token AS push_token, d.push_status AS push_status, d.device_timezone AS device_timezone, ` +
  `toUInt8(${b.enabledPush}) AS has_push, se.last_session_at AS last_session_at`

/**
 * The members of any of several rule sets (a campaign targeting several saved audiences: their
 * union), one row per install. Each rule set is its own SELECT; an install in several yields
 * the same row in each (the row depends on the install only), so UNION DISTINCT keeps one.
 */
export function compileMembersOfAny(
  rules: readonly TargetRules[],
  ctx: AudienceContext,
  page: MembersPage = {},
): CompiledQuery {
  if (rules.length === 0) throw new Error('compileMembersOfAny needs at least one rule set')
  const params = new Params()
  const branches = rules.map((r) => {
    const b = build(r, ctx, params, page, 'members')
    return `SELECT ${memberColumns(b)} FROM ${b.from} WHERE ${b.where}`
  })
  const limit = page.limit !== undefined ? ` LIMIT ${params.bind('UInt64', page.limit)}` : ''
  const sql =
    branches.length === 1
      ? `${branches[0]} ORDER BY install_uuid${limit} ${SETTINGS}`
      : `SELECT * FROM (${branches.join(' UNION DISTINCT ')}) ORDER BY install_uuid${limit} ${SETTINGS}`
  return { sql, params: params.values }
}

export function compileCounts(rules: TargetRules, ctx: AudienceContext): CompiledQuery {
  const params = new Params()
  const b = build(rules, ctx, params, {}, 'counts')
  const sql =
    `SELECT count() AS user_count, countIf(${b.enabledPush}) AS has_push, countIf(${b.seen} = 1) AS seen_last_thirty ` +
    `FROM ${b.from} WHERE ${b.where} ${SETTINGS}`
  return { sql, params: params.values }
}

/** The push endpoint's profile target: members by profile criteria alone. */
export function compileProfileMembers(
  profile: ProfileRules,
  ctx: AudienceContext,
  page: MembersPage = {},
): CompiledQuery {
  return compileMembers(profileOnlyRules(profile), ctx, page)
}
